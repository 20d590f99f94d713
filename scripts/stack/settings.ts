/**
 * The settings of `make up`'s stack: the only place the stack scripts read the environment.
 * Each variable has the default the README documents; every bad value is reported at once.
 */
import { join, resolve } from 'node:path';
import { readManifestId } from '../../embedder/src/model/manifest.js';
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

type Env = Readonly<Record<string, string | undefined>>;

/** Reads the stack's settings from `env`; throws one error naming every bad variable. */
export function upSettings(env: Env): UpSettings {
  const problems: string[] = [];
  const text = (name: string, fallback: string) => (env[name] === undefined || env[name] === '' ? fallback : (env[name] as string));
  const port = (name: string, fallback: number) => {
    const value = Number(text(name, String(fallback)));
    if (!Number.isInteger(value) || value < 1 || value > 65535) problems.push(`${name} must be a port, got "${env[name]}"`);
    return value;
  };
  const stateDir = resolve(text('STACK_DIR', join(repoRoot, '.local')));
  const modelDir = resolve(repoRoot, text('MODEL_DIR', join(repoRoot, '.local/models/default')));
  const modelId = env.MODEL_ID || manifestId(modelDir, problems);
  // Without REDIS_URL the stack runs its own Redis, which keeps what it acknowledges on disk.
  const ownRedis = !env.REDIS_URL;
  const redisPort = port('STACK_REDIS_PORT', 6390);
  const redisUrl = env.REDIS_URL || `redis://127.0.0.1:${redisPort}`;
  const tlsDir = join(stateDir, 'tls');
  const settings: UpSettings = {
    stateDir, caFile: join(tlsDir, 'ca.pem'), redisUrlFile: join(stateDir, 'redis-url'),
    svc: {
      modelDir, modelId, redisUrl, keyHashSecretFile: resolve(text('KEY_HASH_SECRET_FILE', join(stateDir, 'key-hash-secret'))),
      ...(env.REDIS_KEY_PREFIX ? { redisKeyPrefix: env.REDIS_KEY_PREFIX } : {}),
    },
    logDir: join(stateDir, 'logs'), envoyConfigFile: join(stateDir, 'envoy.yaml'), envoyBinary: text('ENVOY_BIN', 'envoy'),
    gateway: { host: text('GATEWAY_HOST', '0.0.0.0'), port: port('GATEWAY_PORT', 8443) }, envoyAdminPort: port('ENVOY_ADMIN_PORT', 9901),
    authz: { host: text('AUTHZ_HOST', '127.0.0.1'), port: port('AUTHZ_PORT', 9191) },
    embedder: { host: text('EMBEDDER_HOST', '127.0.0.1'), port: port('EMBEDDER_PORT', 8081) },
    tls: { certFile: resolve(text('TLS_CERT_FILE', join(tlsDir, 'server.pem'))), keyFile: resolve(text('TLS_KEY_FILE', join(tlsDir, 'server-key.pem'))) },
    envoy: envoyTuning(env, problems),
    // Every other variable (LOG_LEVEL, DEFAULT_RPM, BATCH_MAX_TOKENS, …) reaches the services as before.
    baseEnv: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    ...(ownRedis ? { redis: { port: redisPort, dir: join(stateDir, 'redis') } } : {}),
  };
  if (problems.length > 0) throw new Error(`invalid stack settings:\n  ${problems.join('\n  ')}`);
  return settings;
}

/** Envoy's timeouts and limits, parsed and checked by the renderer's own reader (envoy/render.ts). */
function envoyTuning(env: Env, problems: string[]): LocalStackSettings['envoy'] {
  try {
    const s = settingsFromEnv(env);
    return {
      authzTimeoutMs: s.authzTimeoutMs, embedderTimeoutS: s.embedderTimeoutS, retryAfterSeconds: s.retryAfterSeconds,
      gatewayExtraHosts: s.gatewayExtraHosts ?? [], requestTimeoutS: s.requestTimeoutS, connectionIdleTimeoutS: s.connectionIdleTimeoutS,
      maxConnections: s.maxConnections, maxHeapBytes: s.maxHeapBytes, otlpEndpoint: s.otlpEndpoint,
    };
  } catch (err) {
    problems.push((err as Error).message);
    return {};
  }
}

function manifestId(modelDir: string, problems: string[]): string {
  try {
    return readManifestId(modelDir);
  } catch (err) {
    problems.push(`MODEL_ID is not set and ${(err as Error).message} (set MODEL_ID or MODEL_DIR)`);
    return '';
  }
}
