/**
 * Authz configuration: the only module that reads `process.env`. Every variable is parsed and
 * validated in one pass; all problems are reported together, each naming its variable, and
 * the result is frozen.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readManifestId } from '../../embedder/src/model/manifest.js';

export interface AuthzConfig {
  readonly host: string;
  readonly port: number;
  readonly redisUrl: string;
  /** Redis Sentinels (REDIS_SENTINELS=host:port,…); when set authz uses the primary they name. */
  readonly redisSentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly redisSentinelName?: string;
  readonly redisKeyPrefix: string;
  readonly redisTimeoutMs: number;
  readonly keyPrefix: string;
  readonly keyHashSecret: string;
  readonly modelId: string;
  readonly defaultRpm: number;
  readonly defaultTpm: number;
  /** How long a Check may reuse a key lookup (0 = never); see key-cache.ts for why. */
  readonly keyCacheTtlMs: number;
  /**
   * On SIGTERM, how long authz keeps answering (saying NOT_SERVING) before it stops listening:
   * long enough for health checks to move Checks elsewhere, and, with a single replica, for the
   * embedder's requests in flight to record their usage.
   */
  readonly drainMs: number;
  readonly logLevel: string;
  /** GET /metrics listens here (internal: loopback by default, never routed by Envoy). */
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off when unset. */
  readonly otlpEndpoint: string | undefined;
}

/** Thrown when the environment holds bad values; the message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid authz configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const MIN_SECRET_LENGTH = 32;

type Env = Readonly<Record<string, string | undefined>>;

/** Parses and validates `env` (defaults to `process.env`) into a frozen config. */
export function loadConfig(env: Env = process.env): AuthzConfig {
  const problems: string[] = [];
  const read = new Reader(env, problems);
  const config: AuthzConfig = {
    host: read.string('AUTHZ_HOST', '127.0.0.1'),
    port: read.integer('AUTHZ_PORT', 9191, 0, 65535),
    redisUrl: read.matching('REDIS_URL', defaultRedisUrl(env), /^rediss?:\/\/\S+$/, 'a redis:// URL'),
    redisSentinels: readSentinels(env, problems),
    redisSentinelName: read.matching('REDIS_SENTINEL_NAME', 'ctg', /^[A-Za-z0-9._-]{1,64}$/, '1-64 of A-Z a-z 0-9 . _ -'),
    redisKeyPrefix: read.matching('REDIS_KEY_PREFIX', 'ctg:', /^[A-Za-z0-9:_.-]{1,64}$/, '1-64 of A-Z a-z 0-9 : _ . -'),
    redisTimeoutMs: read.integer('REDIS_TIMEOUT_MS', 500, 10, 60_000),
    keyPrefix: read.matching('KEY_PREFIX', 'CTG', /^[A-Z][A-Z0-9]{0,15}$/, 'an upper-case letter then up to 15 of A-Z 0-9'),
    keyHashSecret: readSecret(env, problems),
    modelId: readModelId(env, problems),
    defaultRpm: read.integer('DEFAULT_RPM', 600, 0, 100_000_000),
    defaultTpm: read.integer('DEFAULT_TPM', 1_000_000, 0, 1_000_000_000),
    // Bounded: it is also how long a revoked key or a changed organization may go unnoticed.
    keyCacheTtlMs: read.integer('KEY_CACHE_TTL_MS', 1000, 0, 60_000),
    // A few of Envoy's 0.5 s health-check intervals (envoy/envoy.yaml.tmpl).
    drainMs: read.integer('AUTHZ_DRAIN_MS', 1_500, 0, 3_600_000),
    logLevel: read.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    metricsHost: read.string('AUTHZ_METRICS_HOST', '127.0.0.1'),
    metricsPort: read.integer('AUTHZ_METRICS_PORT', 9192, 0, 65535),
    otlpEndpoint: read.matching('OTEL_EXPORTER_OTLP_ENDPOINT', '', /^(https?:\/\/[^\s/]+\/?)?$/, 'an http(s):// base URL (host and port, no path)') || undefined,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

class Reader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  string(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === '' ? fallback : value;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name, String(fallback));
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      this.problems.push(`${name}: must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  }

  matching(name: string, fallback: string, pattern: RegExp, meaning: string): string {
    const value = this.string(name, fallback);
    if (!pattern.test(value)) this.problems.push(`${name}: must be ${meaning}, got ${JSON.stringify(value)}`);
    return value;
  }

  oneOf(name: string, fallback: string, allowed: readonly string[]): string {
    const value = this.string(name, fallback);
    if (!allowed.includes(value)) this.problems.push(`${name}: must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
    return value;
  }
}

function fromRepo(path: string): string {
  return isAbsolute(path) ? path : resolve(repoRoot, path);
}

// The admin CLI and the service must hash keys with the same secret; by default both read the
// file `make up` creates, so nobody has to export anything for local use.
function readSecret(env: Env, problems: string[]): string {
  const direct = env.KEY_HASH_SECRET;
  const file = fromRepo(env.KEY_HASH_SECRET_FILE || '.local/key-hash-secret');
  let secret = direct;
  if (!secret) {
    if (!existsSync(file)) {
      problems.push(`KEY_HASH_SECRET / KEY_HASH_SECRET_FILE: no secret set and ${file} does not exist (run \`make up\` or set KEY_HASH_SECRET)`);
      return '';
    }
    secret = readFileSync(file, 'utf8').trim();
  }
  if (secret.length < MIN_SECRET_LENGTH) {
    const source = direct ? 'KEY_HASH_SECRET' : `KEY_HASH_SECRET_FILE (${file})`;
    problems.push(`${source}: the secret must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  return secret;
}

// `make up` runs its own persistent Redis on a port of its own and writes its URL here, so the
// admin CLI finds it as it finds the key-hash secret; without the file, the usual local Redis.
function defaultRedisUrl(env: Env): string {
  const file = fromRepo(env.REDIS_URL_FILE || '.local/redis-url');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : 'redis://127.0.0.1:6379';
}

function readSentinels(env: Env, problems: string[]): Array<{ host: string; port: number }> {
  const raw = env.REDIS_SENTINELS?.trim();
  if (!raw) return [];
  return raw.split(',').map((item) => {
    const match = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(item.trim());
    if (!match || Number(match[2]) > 65535) problems.push(`REDIS_SENTINELS: must be host:port[,host:port…], got ${JSON.stringify(item)}`);
    return { host: match?.[1] ?? '', port: Number(match?.[2] ?? 0) };
  });
}

// The stack passes the same MODEL_ID to the embedder and authz; without it, authz serves the
// id in the installed model's manifest, as the embedder does.
function readModelId(env: Env, problems: string[]): string {
  if (env.MODEL_ID) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._\/-]{0,127}$/.test(env.MODEL_ID)) {
      problems.push(`MODEL_ID: must be 1-128 of A-Z a-z 0-9 . _ / - , got ${JSON.stringify(env.MODEL_ID)}`);
    }
    return env.MODEL_ID;
  }
  const dir = fromRepo(env.MODEL_DIR || '.local/models/default');
  try {
    return readManifestId(dir);
  } catch (error) {
    problems.push(`MODEL_ID: not set, and the manifest in MODEL_DIR cannot tell it: ${(error as Error).message}`);
  }
  return '';
}
