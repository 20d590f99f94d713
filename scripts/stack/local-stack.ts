/**
 * One gateway on one host: authz, the embedder and Envoy in front (and, for make up, its own
 * persistent Redis), each under a Supervisor. make up (daemon.ts), the test suite
 * (test/support/stack.ts) and the bench (bench/stack.ts) all start the gateway through here.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTHZ_DEFAULTS, firstValue, writeEnvoyConfig, type EnvoySettings } from '../../envoy/render.js';
import {
  authzComponent,
  embedderComponent,
  envoyComponent,
  logFileOf,
  redisComponent,
  type ComponentSpec,
  type ServiceContract,
} from './components.js';
import { ensureSecretFile } from './secrets.js';
import { DEFAULT_RESTART, Supervisor, type RestartPolicy, type SupervisorEvent } from './supervisor.js';

export type ServiceName = 'authz' | 'embedder' | 'envoy';

/** Everything one local gateway needs. */
export interface LocalStackSettings {
  readonly svc: ServiceContract;
  readonly logDir: string;
  /** Where the rendered Envoy bootstrap is written. */
  readonly envoyConfigFile: string;
  readonly envoyBinary: string;
  readonly envoyConcurrency?: number;
  readonly gateway: { readonly host: string; readonly port: number };
  readonly envoyAdminPort: number;
  readonly authz: { readonly host: string; readonly port: number };
  readonly embedder: { readonly host: string; readonly port: number };
  readonly tls: { readonly certFile: string; readonly keyFile: string };
  /** Envoy's ext_authz deadline and others (render.ts defaults otherwise). */
  /** Envoy's timeouts and limits (the ports, addresses and files come from the fields above). */
  readonly envoy?: Partial<
    Omit<
      EnvoySettings,
      | 'gatewayHost'
      | 'gatewayPort'
      | 'adminPort'
      | 'embedderHost'
      | 'embedderPort'
      | 'authzHost'
      | 'authzPort'
      | 'tlsCertFile'
      | 'tlsKeyFile'
    >
  >;
  /** Inherited by authz and the embedder (user settings such as LOG_LEVEL); the contract wins. */
  readonly baseEnv?: Readonly<Record<string, string>>;
  readonly overrides?: Partial<Record<'authz' | 'embedder', Readonly<Record<string, string>>>>;
  /** A redis-server of the stack's own (make up); absent when REDIS_URL is someone else's. */
  readonly redis?: { readonly port: number; readonly dir: string };
  readonly restart?: RestartPolicy;
}

/** Builds each component's spec from the settings. */
export function localComponents(s: LocalStackSettings): Record<ServiceName, ComponentSpec> & { redis?: ComponentSpec } {
  const at = (name: 'authz' | 'embedder', where: { host: string; port: number }) => ({
    ...where,
    logFile: logFileOf(s.logDir, name),
    baseEnv: s.baseEnv,
    overrides: s.overrides?.[name],
  });
  return {
    ...(s.redis
      ? {
          redis: redisComponent({
            bind: '127.0.0.1',
            port: s.redis.port,
            dir: s.redis.dir,
            logFile: logFileOf(s.logDir, 'redis'),
            // The embedder's user survives a restart of Redis, as the data does.
            extraArgs: ['--aclfile', aclFileOf(s.redis.dir)],
          }),
        }
      : {}),
    authz: authzComponent(s.svc, at('authz', s.authz)),
    embedder: embedderComponent(s.svc, at('embedder', s.embedder)),
    envoy: envoyComponent({
      binary: s.envoyBinary,
      configFile: s.envoyConfigFile,
      adminPort: s.envoyAdminPort,
      gatewayHost: s.gateway.host,
      gatewayPort: s.gateway.port,
      logFile: logFileOf(s.logDir, 'envoy'),
      concurrency: s.envoyConcurrency,
    }),
  };
}

/** Renders the Envoy bootstrap for a local stack into its config file. */
export function writeLocalEnvoyConfig(s: LocalStackSettings): void {
  // The caller token goes to an SDS file next to the bootstrap (mode 600), never into it.
  writeEnvoyConfig(s.envoyConfigFile, {
    gatewayHost: s.gateway.host,
    gatewayPort: s.gateway.port,
    adminPort: s.envoyAdminPort,
    embedderHost: s.embedder.host,
    embedderPort: s.embedder.port,
    authzHost: s.authz.host,
    authzPort: s.authz.port,
    tlsCertFile: s.tls.certFile,
    tlsKeyFile: s.tls.keyFile,
    authzTimeoutMs: s.envoy?.authzTimeoutMs ?? AUTHZ_DEFAULTS.timeoutMs,
    embedderTimeoutS: s.envoy?.embedderTimeoutS ?? 600,
    retryAfterSeconds: s.envoy?.retryAfterSeconds ?? 1,
    ...(s.svc.authzCallerTokenFile ? { authzCallerToken: firstValue(readFileSync(s.svc.authzCallerTokenFile, 'utf8')) } : {}),
    ...s.envoy,
  });
}

/** Creates the caller and metrics tokens and the batch key-encryption key the settings name, where they do not exist yet. */
export function ensureStackSecrets(s: LocalStackSettings): void {
  for (const file of [s.svc.authzCallerTokenFile, s.svc.metricsTokenFile, s.svc.batchKekFile]) if (file) ensureSecretFile(file);
}

/** A running local gateway. */
export interface LocalStack {
  readonly supervisors: Record<ServiceName, Supervisor> & { redis?: Supervisor };
  /** Drains and stops everything, Envoy first so no request reaches a stopping service. */
  stop(): Promise<void>;
}

/**
 * Starts Redis (when the stack owns one), then authz and Envoy while the embedder loads its
 * model; resolves once all are ready. On failure everything started is stopped again.
 */
export async function startLocalStack(s: LocalStackSettings, onEvent?: (e: SupervisorEvent) => void): Promise<LocalStack> {
  ensureStackSecrets(s);
  writeLocalEnvoyConfig(s);
  const specs = localComponents(s);
  const policy = s.restart ?? DEFAULT_RESTART;
  const sup = (spec: ComponentSpec) => new Supervisor(spec, policy, onEvent);
  const supervisors = {
    ...(specs.redis ? { redis: sup(specs.redis) } : {}),
    authz: sup(specs.authz),
    embedder: sup(specs.embedder),
    envoy: sup(specs.envoy),
  };
  const stack: LocalStack = { supervisors, stop: () => stopInOrder(supervisors) };
  try {
    if (s.redis) {
      mkdirSync(s.redis.dir, { recursive: true });
      appendFileSync(aclFileOf(s.redis.dir), ''); // Redis will not start on a missing ACL file
    }
    if (supervisors.redis) await supervisors.redis.start();
    // The embedder's Redis user is authz's to create (store/settlement.ts): the embedder is
    // ready once authz made it and loaded the functions.
    const embedderReady = supervisors.embedder.start();
    embedderReady.catch(() => undefined); // awaited below; this only keeps an early rejection handled
    await supervisors.authz.start();
    await supervisors.envoy.start();
    await embedderReady;
    return stack;
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

async function stopInOrder(s: LocalStack['supervisors']): Promise<void> {
  // In dependency order: the gateway stops taking requests and finishes those in flight; the
  // embedder finishes its own, recording their usage; then authz, then Redis.
  await s.envoy.stop();
  await s.embedder.stop();
  await s.authz.stop();
  await s.redis?.stop();
}

/** Where the stack's own Redis keeps its users. */
const aclFileOf = (redisDir: string): string => join(redisDir, 'users.acl');

/** The log directory's path for a state directory. */
export const logDirOf = (stateDir: string): string => join(stateDir, 'logs');
