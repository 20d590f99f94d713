/**
 * The settings of `make up`'s stack: the only place the stack scripts read the environment.
 * Each variable has the default docs/configuration.md documents; every bad value is reported at once,
 * in the wording every process uses (contract/env.ts).
 */
import { join, resolve } from 'node:path';
import { ConfigError, EnvReader, type Env } from '../../contract/env.js';
import { readManifestId } from '../../contract/model-manifest.js';
import { settingsFromEnv } from '../../envoy/render.js';
import { repoRoot } from './components.js';
import type { LocalStackSettings } from './local-stack.js';

/** make up's settings plus where it keeps its state. */
export interface UpSettings extends LocalStackSettings {
  readonly stateDir: string;
  readonly caFile: string;
  /** Written for the admin CLI when the stack runs its own Redis. */
  readonly redisUrlFile: string;
}

/** Reads the stack's settings from `env`; throws one ConfigError naming every bad variable. */
export function upSettings(env: Env): UpSettings {
  const read = new EnvReader(env);
  const port = (name: string, fallback: number) => read.integer(name, fallback, 1, 65535);
  const stateDir = resolve(read.string('STACK_DIR', join(repoRoot, '.local')));
  const modelDir = resolve(repoRoot, read.string('MODEL_DIR', join(repoRoot, '.local/models/default')));
  const modelId = read.optional('MODEL_ID') ?? manifestId(modelDir, read);
  // Without REDIS_URL the stack runs its own Redis, which keeps what it acknowledges on disk.
  const givenRedisUrl = read.optional('REDIS_URL');
  const redisPort = port('STACK_REDIS_PORT', 6390);
  const redisUrl = givenRedisUrl ?? `redis://127.0.0.1:${redisPort}`;
  const redisKeyPrefix = read.optional('REDIS_KEY_PREFIX');
  const tlsDir = join(stateDir, 'tls');
  const settings: UpSettings = {
    stateDir,
    caFile: join(tlsDir, 'ca.pem'),
    redisUrlFile: join(stateDir, 'redis-url'),
    svc: {
      modelDir,
      modelId,
      redisUrl,
      keyHashSecretFile: resolve(read.string('KEY_HASH_SECRET_FILE', join(stateDir, 'key-hash-secret'))),
      grantSecretFile: resolve(read.string('GRANT_SECRET_FILE', join(stateDir, 'grant-secret'))),
      // The embedder runs as its own Redis user, as in production (make up creates the password).
      settlementUser: {
        username: read.string('EMBEDDER_REDIS_USER', 'ctg-embedder'),
        passwordFile: join(stateDir, 'redis-embedder-password'),
      },
      // Created by the stack on start when missing (local-stack.ts); Envoy and Prometheus read them too.
      authzCallerTokenFile: resolve(read.string('AUTHZ_CALLER_TOKEN_FILE', join(stateDir, 'authz-caller-token'))),
      metricsTokenFile: resolve(read.string('METRICS_TOKEN_FILE', join(stateDir, 'metrics-token'))),
      // The Batch API's key-encryption key, apart from its files (.local/batch/).
      batchKekFile: resolve(read.string('BATCH_KEK_FILE', join(stateDir, 'batch-kek'))),
      batchStore: read.string('BATCH_STORE', `dir:${join(stateDir, 'batch')}`),
      ...(redisKeyPrefix ? { redisKeyPrefix } : {}),
    },
    logDir: join(stateDir, 'logs'),
    envoyConfigFile: join(stateDir, 'envoy.yaml'),
    envoyBinary: read.string('ENVOY_BIN', 'envoy'),
    gateway: { host: read.string('GATEWAY_HOST', '0.0.0.0'), port: port('GATEWAY_PORT', 8443) },
    envoyAdminPort: port('ENVOY_ADMIN_PORT', 9901),
    authz: { host: read.string('AUTHZ_HOST', '127.0.0.1'), port: port('AUTHZ_PORT', 9191) },
    embedder: { host: read.string('EMBEDDER_HOST', '127.0.0.1'), port: port('EMBEDDER_PORT', 8081) },
    tls: {
      certFile: resolve(read.string('TLS_CERT_FILE', join(tlsDir, 'server.pem'))),
      keyFile: resolve(read.string('TLS_KEY_FILE', join(tlsDir, 'server-key.pem'))),
    },
    envoy: envoyTuning(env, read),
    // Every other variable (LOG_LEVEL, DEFAULT_RPM, BATCH_MAX_TOKENS, …) reaches the services as before.
    baseEnv: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    ...(givenRedisUrl === undefined ? { redis: { port: redisPort, dir: join(stateDir, 'redis') } } : {}),
  };
  if (read.problems.length > 0) throw new ConfigError(read.problems, 'stack');
  return settings;
}

/** Envoy's timeouts and limits, parsed and checked by the renderer's own reader (envoy/render.ts). */
function envoyTuning(env: Env, read: EnvReader): LocalStackSettings['envoy'] {
  try {
    // The caller token is the stack's own (created on start, local-stack.ts): not read here.
    const s = settingsFromEnv({ ...env, AUTHZ_CALLER_TOKEN_FILE: undefined });
    return {
      authzTimeoutMs: s.authzTimeoutMs,
      authzMaxChecks: s.authzMaxChecks,
      embedderTimeoutS: s.embedderTimeoutS,
      retryAfterSeconds: s.retryAfterSeconds,
      gatewayExtraHosts: s.gatewayExtraHosts ?? [],
      requestTimeoutS: s.requestTimeoutS,
      connectionIdleTimeoutS: s.connectionIdleTimeoutS,
      maxConnections: s.maxConnections,
      maxHeapBytes: s.maxHeapBytes,
      otlpEndpoint: s.otlpEndpoint,
    };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The renderer checks the ports and hosts too; each bad variable is named once.
    const named = new Set(read.problems.map((problem) => problem.split(':')[0]));
    read.problems.push(...err.problems.filter((problem) => !named.has(problem.split(':')[0])));
    return {};
  }
}

function manifestId(modelDir: string, read: EnvReader): string {
  try {
    return readManifestId(modelDir);
  } catch (err) {
    read.problem('MODEL_ID', `be set, or MODEL_DIR hold a readable manifest: ${(err as Error).message}`);
    return '';
  }
}
