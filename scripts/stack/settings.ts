/**
 * The settings of `make up`'s stack: the only place the stack scripts read the environment.
 * Each variable has its declared default (contract/settings.ts, which docs/configuration.md shows); every bad value is reported at once,
 * in the wording every process uses (contract/env.ts).
 */
import { join, relative, resolve } from 'node:path';
import { ConfigError, EnvReader, type Env } from '../../contract/env.js';
import { settingDefault, type SettingOf } from '../../contract/settings.js';
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
  const port = (name: SettingOf<number>) => read.integer(name, 1, 65535);
  const stateDir = resolve(read.optional('STACK_DIR') ?? join(repoRoot, settingDefault('STACK_DIR')));
  // A state file's default is its declared one (`.local/…`), moved under STACK_DIR when that is set.
  const inState = (name: SettingOf<string>) =>
    resolve(read.optional(name) ?? join(stateDir, relative(settingDefault('STACK_DIR'), settingDefault(name))));
  const modelDir = resolve(repoRoot, read.string('MODEL_DIR'));
  const modelId = read.optional('MODEL_ID') ?? manifestId(modelDir, read);
  // Without REDIS_URL the stack runs its own Redis, which keeps what it acknowledges on disk.
  const givenRedisUrl = read.optional('REDIS_URL');
  const redisPort = port('STACK_REDIS_PORT');
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
      keyHashSecretFile: inState('KEY_HASH_SECRET_FILE'),
      grantSecretFile: inState('GRANT_SECRET_FILE'),
      // The embedder runs as its own Redis user, as in production (make up creates the password).
      settlementUser: {
        username: read.string('EMBEDDER_REDIS_USER'),
        passwordFile: join(stateDir, 'redis-embedder-password'),
      },
      // Created by the stack on start when missing (local-stack.ts); Envoy and Prometheus read them too.
      authzCallerTokenFile: inState('AUTHZ_CALLER_TOKEN_FILE'),
      metricsTokenFile: inState('METRICS_TOKEN_FILE'),
      // The Batch API's key-encryption key, apart from its files (.local/batch/).
      batchKekFile: inState('BATCH_KEK_FILE'),
      batchStore:
        read.optional('BATCH_STORE') ??
        `dir:${join(stateDir, relative(settingDefault('STACK_DIR'), settingDefault('BATCH_STORE').replace(/^dir:/, '')))}`,
      ...(redisKeyPrefix ? { redisKeyPrefix } : {}),
    },
    logDir: join(stateDir, 'logs'),
    envoyConfigFile: join(stateDir, 'envoy.yaml'),
    envoyBinary: read.string('ENVOY_BIN'),
    envoyConcurrency: read.optionalInteger('ENVOY_CONCURRENCY', 1, 256),
    gateway: { host: read.string('GATEWAY_HOST'), port: port('GATEWAY_PORT') },
    envoyAdminPort: port('ENVOY_ADMIN_PORT'),
    authz: { host: read.string('AUTHZ_HOST'), port: port('AUTHZ_PORT') },
    embedder: { host: read.string('EMBEDDER_HOST'), port: port('EMBEDDER_PORT') },
    tls: { certFile: inState('TLS_CERT_FILE'), keyFile: inState('TLS_KEY_FILE') },
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
      perSourceRps: s.perSourceRps,
      newKeyRps: s.newKeyRps,
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
