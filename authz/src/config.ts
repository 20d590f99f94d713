/**
 * Authz configuration: the one module of authz that reads `process.env` (main.ts calls it once;
 * test/contract/env-readers.unit.test.ts checks; libraries read their own OTEL_* and GRPC_*).
 * Every variable is parsed and validated in one pass; all problems are reported together, each
 * naming its variable, and the result is frozen.
 */
import { repoRoot } from '../../contract/repo-root.js';
import { readAccessSettings, type AccessSettings } from '../../contract/access-settings.js';
import { settingDefault } from '../../contract/settings.js';
import { EnvReader, readLogLevel, readOtlpEndpoint, type Env, type LogLevel } from '../../contract/env.js';
import { readRedisSettings, type RedisTarget } from '../../contract/redis-target.js';
import { readOptionalFile, readSecretValues, readTokenValues, type SecretValues } from '../../contract/secrets.js';

export { ConfigError } from '../../contract/env.js';

/** The key cache's default bounds (store/key-cache.ts): the declared defaults of the KEY_CACHE_* settings that override them. */
export const KEY_CACHE_DEFAULTS = Object.freeze({
  maxKnown: settingDefault('KEY_CACHE_MAX_KEYS'),
  maxUnknown: settingDefault('KEY_CACHE_MAX_UNKNOWN'),
  maxUnknownInFlight: settingDefault('KEY_LOOKUPS_MAX_IN_FLIGHT'),
});

export interface AuthzConfig extends AccessSettings {
  readonly host: string;
  readonly port: number;
  readonly redisUrl: string;
  /** Redis Sentinels (REDIS_SENTINELS=host:port,…); when set authz uses the primary they name. */
  readonly redisSentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** A Redis Cluster's seed nodes (REDIS_CLUSTER_NODES=host:port,…). */
  readonly redisClusterNodes?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly redisSentinelName?: string;
  /** The sentinels' own password (REDIS_SENTINEL_PASSWORD_FILE); the primary's is in the URL. */
  readonly redisSentinelPassword?: string;
  /** PEM CA for rediss:// (REDIS_TLS_CA_FILE); the system's CAs when absent. */
  readonly redisTlsCa?: string;
  readonly redisKeyPrefix: string;
  readonly redisTimeoutMs: number;
  /**
   * Signs the grant the embedder verifies (contract/grant.ts); shared with the embedder only.
   * authz signs with the current value (the file's first line; contract/secrets.ts).
   */
  readonly grantSecret: SecretValues;
  /** How long a grant stays valid: the whole request, body included, must reach the embedder within it. */
  readonly grantTtlMs: number;
  /**
   * The embedder's Redis user (EMBEDDER_REDIS_USERNAME, EMBEDDER_REDIS_PASSWORD[_FILE]), which
   * authz creates and keeps (store/settlement.ts): its rules name the settlement's secret
   * namespace. Unset, nobody creates it (the embedder then uses a full user: development).
   */
  readonly embedderRedisUser?: { readonly username: string; readonly password: string };
  /** How long a Check may reuse a key lookup (0 = never); see key-cache.ts for why. */
  readonly keyCacheTtlMs: number;
  /** Bounds of the key cache (key-cache.ts): keys that exist, "not found" answers, unknown ids in flight. */
  readonly keyCacheMaxKeys: number;
  readonly keyCacheMaxUnknown: number;
  readonly keyLookupsMaxInFlight: number;
  /** Checks decided at once (edge/admission.ts); past it UNAVAILABLE at once. */
  readonly checksMaxInFlight: number;
  /**
   * The secret Envoy sends with every Check (AUTHZ_CALLER_TOKEN[_FILE]); authz's gRPC services
   * other than health refuse any caller without it (edge/caller.ts). Undefined when none is
   * configured; main.ts refuses to start without it (tests build servers with their own).
   */
  readonly callerToken: SecretValues | undefined;
  /**
   * How Check's callers prove they are the gateway (AUTHZ_CALLER_AUTH): `token` (default), or
   * `mesh` for Istio mode, where the mesh's ingress gateway cannot send metadata and the mesh's
   * mTLS with an AuthorizationPolicy on authz's port must admit only that gateway.
   */
  readonly callerAuth: 'token' | 'mesh';
  /** The bearer token GET /metrics requires (METRICS_TOKEN[_FILE]); main.ts refuses to start without it. */
  readonly metricsToken: SecretValues | undefined;
  /**
   * On SIGTERM, how long authz keeps answering (saying NOT_SERVING) before it stops listening:
   * long enough for health checks to move Checks elsewhere, and, with a single replica, for the
   * embedder's requests in flight to record their usage.
   */
  readonly drainMs: number;
  readonly logLevel: LogLevel;
  /** GET /metrics listens here (internal: loopback by default, never routed by Envoy). */
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off when unset. */
  readonly otlpEndpoint: string | undefined;
}

/**
 * Parses and validates `env` (defaults to `process.env`) into a frozen config; throws one
 * ConfigError naming every bad variable.
 */
export function loadConfig(env: Env = process.env): AuthzConfig {
  const read = new EnvReader(env);
  const redis = readRedisSettings(read);
  const access = readAccessSettings(read, repoRoot);
  return read.finish('authz', {
    host: read.string('AUTHZ_HOST'),
    port: read.integer('AUTHZ_PORT', 0, 65535),
    redisUrl: redis.url,
    redisSentinels: redis.sentinels,
    ...(redis.clusterNodes ? { redisClusterNodes: redis.clusterNodes } : {}),
    redisSentinelName: redis.sentinelName,
    ...(redis.sentinelPassword !== undefined ? { redisSentinelPassword: redis.sentinelPassword } : {}),
    ...(redis.tlsCa !== undefined ? { redisTlsCa: redis.tlsCa } : {}),
    redisKeyPrefix: redis.prefix,
    redisTimeoutMs: redis.timeoutMs,
    ...access,
    grantSecret: readSecretValues(read, 'GRANT_SECRET', repoRoot),
    grantTtlMs: read.integer('GRANT_TTL_MS', 1_000, 3_600_000),
    ...readEmbedderUser(read),
    // Bounded: it is also how long a revoked key or a changed organization may go unnoticed.
    keyCacheTtlMs: read.integer('KEY_CACHE_TTL_MS', 0, 60_000),
    keyCacheMaxKeys: read.integer('KEY_CACHE_MAX_KEYS', 1, 10_000_000),
    keyCacheMaxUnknown: read.integer('KEY_CACHE_MAX_UNKNOWN', 0, 10_000_000),
    keyLookupsMaxInFlight: read.integer('KEY_LOOKUPS_MAX_IN_FLIGHT', 1, 100_000),
    checksMaxInFlight: read.integer('AUTHZ_MAX_CHECKS_IN_FLIGHT', 1, 100_000),
    callerToken: readTokenValues(read, 'AUTHZ_CALLER_TOKEN', repoRoot),
    callerAuth: read.oneOf('AUTHZ_CALLER_AUTH', ['token', 'mesh']) as 'token' | 'mesh',
    metricsToken: readTokenValues(read, 'METRICS_TOKEN', repoRoot),
    drainMs: read.integer('AUTHZ_DRAIN_MS', 0, 3_600_000),
    logLevel: readLogLevel(read),
    metricsHost: read.string('AUTHZ_METRICS_HOST'),
    metricsPort: read.integer('AUTHZ_METRICS_PORT', 0, 65535),
    otlpEndpoint: readOtlpEndpoint(read),
  });
}

/** EMBEDDER_REDIS_USERNAME with EMBEDDER_REDIS_PASSWORD or EMBEDDER_REDIS_PASSWORD_FILE, or nothing. */
function readEmbedderUser(read: EnvReader): Pick<AuthzConfig, 'embedderRedisUser'> {
  const username = read.optional('EMBEDDER_REDIS_USERNAME');
  if (username === undefined) return {};
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(username)) read.problem('EMBEDDER_REDIS_USERNAME', 'be 1-64 of A-Z a-z 0-9 . _ -', username);
  const password =
    read.optional('EMBEDDER_REDIS_PASSWORD') ??
    readOptionalFile(read, 'EMBEDDER_REDIS_PASSWORD_FILE', /^\S{16,512}$/, 'one line of at least 16 characters, no spaces', repoRoot);
  if (password === undefined) {
    read.problem('EMBEDDER_REDIS_PASSWORD / EMBEDDER_REDIS_PASSWORD_FILE', 'be set with EMBEDDER_REDIS_USERNAME');
    return {};
  }
  return { embedderRedisUser: { username, password } };
}

/** Where authz's Redis is and how to reach it, from the config (what openRedis takes). */
export function redisTargetOf(config: AuthzConfig): RedisTarget {
  return {
    url: config.redisUrl,
    sentinels: config.redisSentinels,
    ...(config.redisClusterNodes ? { clusterNodes: config.redisClusterNodes } : {}),
    sentinelName: config.redisSentinelName,
    ...(config.redisSentinelPassword ? { sentinelPassword: config.redisSentinelPassword } : {}),
    ...(config.redisTlsCa ? { tlsCa: config.redisTlsCa } : {}),
  };
}
