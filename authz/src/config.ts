/**
 * Authz configuration: the only module that reads `process.env`. Every variable is parsed and
 * validated in one pass; all problems are reported together, each naming its variable, and
 * the result is frozen.
 */
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvReader, readLogLevel, readOtlpEndpoint, type Env, type LogLevel } from '../../contract/env.js';
import { readManifestId } from '../../contract/model-manifest.js';
import { readRedisSettings, type RedisTarget } from '../../contract/redis-target.js';
import { readSecret, readToken } from '../../contract/secrets.js';
import { KEY_CACHE_DEFAULTS } from './key-cache.js';

export { ConfigError } from '../../contract/env.js';

export interface AuthzConfig {
  readonly host: string;
  readonly port: number;
  readonly redisUrl: string;
  /** Redis Sentinels (REDIS_SENTINELS=host:port,…); when set authz uses the primary they name. */
  readonly redisSentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly redisSentinelName?: string;
  /** The sentinels' own password (REDIS_SENTINEL_PASSWORD_FILE); the primary's is in the URL. */
  readonly redisSentinelPassword?: string;
  /** PEM CA for rediss:// (REDIS_TLS_CA_FILE); the system's CAs when absent. */
  readonly redisTlsCa?: string;
  readonly redisKeyPrefix: string;
  readonly redisTimeoutMs: number;
  readonly keyPrefix: string;
  readonly keyHashSecret: string;
  /** Signs the grant the embedder verifies (contract/grant.ts); shared with the embedder only. */
  readonly grantSecret: string;
  /** How long a grant stays valid: the whole request, body included, must reach the embedder within it. */
  readonly grantTtlMs: number;
  readonly modelId: string;
  readonly defaultRpm: number;
  readonly defaultTpm: number;
  /** How long a Check may reuse a key lookup (0 = never); see key-cache.ts for why. */
  readonly keyCacheTtlMs: number;
  /** Bounds of the key cache (key-cache.ts): keys that exist, "not found" answers, unknown ids in flight. */
  readonly keyCacheMaxKeys: number;
  readonly keyCacheMaxUnknown: number;
  readonly keyLookupsMaxInFlight: number;
  /**
   * The secret Envoy sends with every Check (AUTHZ_CALLER_TOKEN[_FILE]); authz's gRPC services
   * other than health refuse any caller without it (caller.ts). Undefined only where no token
   * is configured: the admin CLI, which serves nothing; main.ts refuses to start without it.
   */
  readonly callerToken: string | undefined;
  /**
   * How Check's callers prove they are the gateway (AUTHZ_CALLER_AUTH): `token` (default), or
   * `mesh` for Istio mode, where the mesh's ingress gateway cannot send metadata and the mesh's
   * mTLS with an AuthorizationPolicy on authz's port must admit only that gateway.
   */
  readonly callerAuth: 'token' | 'mesh';
  /** The bearer token GET /metrics requires (METRICS_TOKEN[_FILE]); main.ts refuses to start without it. */
  readonly metricsToken: string | undefined;
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

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Parses and validates `env` (defaults to `process.env`) into a frozen config; throws one
 * ConfigError naming every bad variable. The admin CLI and console pass `{ grants: false }`:
 * they sign no grant, so they need no grant secret.
 */
export function loadConfig(env: Env = process.env, options: { grants?: boolean } = {}): AuthzConfig {
  const read = new EnvReader(env);
  const redis = readRedisSettings(read);
  return read.finish('authz', {
    host: read.string('AUTHZ_HOST', '127.0.0.1'),
    port: read.integer('AUTHZ_PORT', 9191, 0, 65535),
    redisUrl: redis.url,
    redisSentinels: redis.sentinels,
    redisSentinelName: redis.sentinelName,
    ...(redis.sentinelPassword !== undefined ? { redisSentinelPassword: redis.sentinelPassword } : {}),
    ...(redis.tlsCa !== undefined ? { redisTlsCa: redis.tlsCa } : {}),
    redisKeyPrefix: redis.prefix,
    redisTimeoutMs: redis.timeoutMs,
    keyPrefix: read.matching('KEY_PREFIX', 'CTG', /^[A-Z][A-Z0-9]{0,15}$/, 'an upper-case letter then up to 15 of A-Z 0-9'),
    // The admin CLI and the service must hash keys with the same secret; by default both read
    // the file `make up` creates, so nobody has to export anything for local use.
    keyHashSecret: readSecret(read, 'KEY_HASH_SECRET', '.local/key-hash-secret', repoRoot),
    grantSecret: options.grants === false ? '' : readSecret(read, 'GRANT_SECRET', '.local/grant-secret', repoRoot),
    // Envoy's REQUEST_TIMEOUT_S (60 s) for the body, plus a margin.
    grantTtlMs: read.integer('GRANT_TTL_MS', 90_000, 1_000, 3_600_000),
    modelId: readModelId(read),
    defaultRpm: read.integer('DEFAULT_RPM', 600, 0, 100_000_000),
    defaultTpm: read.integer('DEFAULT_TPM', 1_000_000, 0, 1_000_000_000),
    // Bounded: it is also how long a revoked key or a changed organization may go unnoticed.
    keyCacheTtlMs: read.integer('KEY_CACHE_TTL_MS', 1000, 0, 60_000),
    keyCacheMaxKeys: read.integer('KEY_CACHE_MAX_KEYS', KEY_CACHE_DEFAULTS.maxKnown, 1, 10_000_000),
    keyCacheMaxUnknown: read.integer('KEY_CACHE_MAX_UNKNOWN', KEY_CACHE_DEFAULTS.maxUnknown, 0, 10_000_000),
    keyLookupsMaxInFlight: read.integer('KEY_LOOKUPS_MAX_IN_FLIGHT', KEY_CACHE_DEFAULTS.maxUnknownInFlight, 1, 100_000),
    callerToken: readToken(read, 'AUTHZ_CALLER_TOKEN', '.local/authz-caller-token', repoRoot),
    callerAuth: read.oneOf('AUTHZ_CALLER_AUTH', 'token', ['token', 'mesh']) as 'token' | 'mesh',
    metricsToken: readToken(read, 'METRICS_TOKEN', '.local/metrics-token', repoRoot),
    // A few of Envoy's 0.5 s health-check intervals (envoy/envoy.yaml.tmpl).
    drainMs: read.integer('AUTHZ_DRAIN_MS', 1_500, 0, 3_600_000),
    logLevel: readLogLevel(read),
    metricsHost: read.string('AUTHZ_METRICS_HOST', '127.0.0.1'),
    metricsPort: read.integer('AUTHZ_METRICS_PORT', 9192, 0, 65535),
    otlpEndpoint: readOtlpEndpoint(read),
  });
}

function fromRepo(path: string): string {
  return isAbsolute(path) ? path : resolve(repoRoot, path);
}

// The stack passes the same MODEL_ID to the embedder and authz; without it, authz serves the
// id in the installed model's manifest, as the embedder does.
function readModelId(read: EnvReader): string {
  const modelId = read.optional('MODEL_ID');
  if (modelId !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/.test(modelId)) read.problem('MODEL_ID', 'be 1-128 of A-Z a-z 0-9 . _ / -', modelId);
    return modelId;
  }
  const dir = fromRepo(read.string('MODEL_DIR', '.local/models/default'));
  try {
    return readManifestId(dir);
  } catch (error) {
    read.problem('MODEL_ID', `be set, or MODEL_DIR hold a readable manifest: ${(error as Error).message}`);
  }
  return '';
}

/** Where authz's Redis is and how to reach it, from the config (what openRedis takes). */
export function redisTargetOf(config: AuthzConfig): RedisTarget {
  return {
    url: config.redisUrl,
    sentinels: config.redisSentinels,
    sentinelName: config.redisSentinelName,
    ...(config.redisSentinelPassword ? { sentinelPassword: config.redisSentinelPassword } : {}),
    ...(config.redisTlsCa ? { tlsCa: config.redisTlsCa } : {}),
  };
}
