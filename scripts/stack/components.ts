/**
 * The stack's components and their contracts: what each one runs, the environment it is given,
 * how its readiness is known, and how long it may take to drain. Everything that starts the
 * gateway (make up, the test suite, the bench, make fleet) builds its components here.
 */
import { join } from 'node:path';
import { repoRoot } from '../../contract/repo-root.js';
import { usableCores } from '../../contract/usable-cores.js';
import { drainEnvoy } from './envoy-drain.js';
import type { ChildOptions } from './child.js';
import { allOf, httpOk, tcpOpen, type Probe } from './probes.js';
import { redisAnswers } from './redis-probe.js';

/** The command lines of the two TypeScript services (relative to the repository root). */
export const ENTRYPOINTS: Readonly<Record<'authz' | 'embedder', readonly string[]>> = Object.freeze({
  authz: Object.freeze(['node', '--import', 'tsx', 'authz/src/main.ts']),
  embedder: Object.freeze(['node', '--import', 'tsx', 'embedder/src/main.ts']),
});

export { repoRoot };

/** A component as the supervisor runs it. */
export interface ComponentSpec extends ChildOptions {
  readonly ready: Probe;
  readonly readyTimeoutMs: number;
  /** Run before SIGTERM, bounded by the grace, for a process that does not drain on SIGTERM itself. */
  readonly drain?: (graceMs: number) => Promise<void>;
  /** How long SIGTERM may take (draining in-flight work) before SIGKILL. */
  readonly stopGraceMs: number;
}

/** What authz, the embedder and the admin CLI must agree on. */
export interface ServiceContract {
  readonly modelDir: string;
  readonly modelId: string;
  readonly keyHashSecretFile: string;
  /** The grant secret authz signs with and the embedder verifies with. */
  readonly grantSecretFile: string;
  readonly redisUrl: string;
  readonly redisKeyPrefix?: string;
  /** host:port,… of Redis Sentinels; when set, authz finds the primary through them. */
  readonly redisSentinels?: string;
  readonly redisSentinelName?: string;
  /** host:port,… of a Redis Cluster's seed nodes (REDIS_CLUSTER_NODES; not with redisSentinels). */
  readonly redisClusterNodes?: string;
  /**
   * The embedder's own Redis user (settlement only), which authz creates and keeps (its rules
   * name the settlement's secret namespace); without it, the embedder uses REDIS_URL's.
   */
  readonly settlementUser?: SettlementUser;
  /** The secret Envoy sends authz with every Check (authz/src/edge/caller.ts); the stack creates it. */
  readonly authzCallerTokenFile?: string;
  /** The bearer token authz's and the embedder's GET /metrics require (Prometheus sends it); the stack creates it. */
  readonly metricsTokenFile?: string;
  /** The Batch API's key-encryption key (the stack creates it) and where its files live (`dir:…` or a postgres:// URL). */
  readonly batchKekFile?: string;
  readonly batchStore?: string;
}

/** Who the embedder is on Redis: an ACL user and the file holding its password. */
export interface SettlementUser {
  readonly username: string;
  readonly passwordFile: string;
}

// authz and the embedder reach the same Redis, the same way.
function redisEnv(svc: ServiceContract): Record<string, string> {
  return {
    REDIS_URL: svc.redisUrl,
    ...(svc.redisKeyPrefix ? { REDIS_KEY_PREFIX: svc.redisKeyPrefix } : {}),
    ...(svc.redisSentinels ? { REDIS_SENTINELS: svc.redisSentinels, REDIS_SENTINEL_NAME: svc.redisSentinelName ?? 'ctg' } : {}),
    ...(svc.redisClusterNodes ? { REDIS_CLUSTER_NODES: svc.redisClusterNodes } : {}),
  };
}

/** Where one instance runs and what else it is given. */
export interface Placement {
  readonly name?: string;
  readonly host: string;
  readonly port: number;
  readonly logFile: string;
  /** The inherited environment (PATH, HOME, user settings such as LOG_LEVEL); the contract wins. */
  readonly baseEnv?: Readonly<Record<string, string>>;
  readonly overrides?: Readonly<Record<string, string>>;
  readonly netns?: string;
  /** Another entry file (a patched copy the bench measures) and node flags (e.g. --cpu-prof). */
  readonly entry?: string;
  readonly nodeArgs?: readonly string[];
}

/** The environment authz is given (the tests run the admin CLI with it too: admin reads what it shares). */
export function authzEnv(svc: ServiceContract, host: string, port: number): Record<string, string> {
  return {
    AUTHZ_HOST: host,
    AUTHZ_PORT: String(port),
    ...redisEnv(svc),
    KEY_HASH_SECRET_FILE: svc.keyHashSecretFile,
    GRANT_SECRET_FILE: svc.grantSecretFile,
    MODEL_ID: svc.modelId,
    MODEL_DIR: svc.modelDir,
    ...(svc.authzCallerTokenFile ? { AUTHZ_CALLER_TOKEN_FILE: svc.authzCallerTokenFile } : {}),
    ...(svc.metricsTokenFile ? { METRICS_TOKEN_FILE: svc.metricsTokenFile } : {}),
    ...(svc.settlementUser
      ? { EMBEDDER_REDIS_USERNAME: svc.settlementUser.username, EMBEDDER_REDIS_PASSWORD_FILE: svc.settlementUser.passwordFile }
      : {}),
  };
}

/** The environment the embedder is given. */
export function embedderEnv(svc: ServiceContract, host: string, port: number): Record<string, string> {
  return {
    EMBEDDER_HOST: host,
    EMBEDDER_PORT: String(port),
    MODEL_DIR: svc.modelDir,
    MODEL_ID: svc.modelId,
    GRANT_SECRET_FILE: svc.grantSecretFile,
    ...redisEnv(svc),
    ...(svc.metricsTokenFile ? { METRICS_TOKEN_FILE: svc.metricsTokenFile } : {}),
    ...(svc.settlementUser ? { REDIS_USERNAME: svc.settlementUser.username, REDIS_PASSWORD_FILE: svc.settlementUser.passwordFile } : {}),
    ...(svc.batchKekFile ? { BATCH_KEK_FILE: svc.batchKekFile } : {}),
    ...(svc.batchStore ? { BATCH_STORE: svc.batchStore } : {}),
  };
}

function tsService(which: 'authz' | 'embedder', at: Placement, env: Record<string, string>) {
  const [, ...standard] = ENTRYPOINTS[which];
  const args = [...(at.nodeArgs ?? []), ...standard.slice(0, -1), at.entry ?? (standard.at(-1) as string)];
  return {
    name: at.name ?? which,
    command: process.execPath,
    args,
    cwd: repoRoot,
    logFile: at.logFile,
    netns: at.netns,
    env: { ...minimalEnv(), ...at.baseEnv, ...env, ...at.overrides },
  };
}

/** authz: ready once it listens (it connects to Redis in the background and fails closed until then). */
export function authzComponent(svc: ServiceContract, at: Placement): ComponentSpec {
  return {
    ...tsService('authz', at, authzEnv(svc, at.host, at.port)),
    ready: tcpOpen(probeHost(at.host), at.port),
    readyTimeoutMs: 60_000,
    // authz drains its gRPC calls for up to 5 s itself (authz/src/main.ts).
    stopGraceMs: 8_000,
  };
}

/** The embedder: ready once GET /ready answers 200 (model loaded, settlement store up); it drains on SIGTERM itself. */
export function embedderComponent(svc: ServiceContract, at: Placement): ComponentSpec {
  return {
    ...tsService('embedder', at, embedderEnv(svc, at.host, at.port)),
    ready: httpOk(`http://${probeHost(at.host)}:${at.port}/ready`),
    readyTimeoutMs: 300_000,
    // In-flight requests finish before it exits (EMBEDDER_DRAIN_S); a large request takes minutes.
    stopGraceMs: 600_000,
  };
}

/** Where Envoy runs: its rendered bootstrap and the ports it serves. */
export interface EnvoyPlacement {
  readonly name?: string;
  readonly binary: string;
  readonly configFile: string;
  readonly adminPort: number;
  readonly gatewayHost: string;
  readonly gatewayPort: number;
  readonly logFile: string;
  readonly netns?: string;
  /** Worker threads (ENVOY_CONCURRENCY); localEnvoyWorkers() when absent. */
  readonly concurrency?: number;
}

/**
 * ENVOY_CONCURRENCY's default (contract/settings.ts): one worker per four usable cores (a CPU
 * limit counts: contract/usable-cores.ts), at least one.
 * A local Envoy shares the machine with authz, the embedder and Redis, and is about a quarter
 * of the path's CPU; Envoy's own default, a worker per core, splits the same traffic over more
 * connections and wake-ups for nothing.
 */
export function localEnvoyWorkers(cores: number = usableCores()): number {
  return Math.max(1, Math.round(cores / 4));
}

/** Envoy: ready once its admin /ready says LIVE and the gateway listener accepts connections. */
export function envoyComponent(at: EnvoyPlacement): ComponentSpec {
  return {
    name: at.name ?? 'envoy',
    command: at.binary,
    cwd: repoRoot,
    logFile: at.logFile,
    netns: at.netns,
    // Hot restart shares memory between Envoys with one base id; several stacks run side by side.
    // The access log reaches its file within a second (Envoy's default is ten).
    args: [
      '-c',
      at.configFile,
      '--disable-hot-restart',
      '--log-level',
      'warn',
      '--file-flush-interval-msec',
      '1000',
      '--concurrency',
      String(at.concurrency ?? localEnvoyWorkers()),
    ],
    env: minimalEnv(),
    ready: allOf(httpOk(`http://127.0.0.1:${at.adminPort}/ready`), tcpOpen(probeHost(at.gatewayHost), at.gatewayPort)),
    readyTimeoutMs: 30_000,
    // Envoy exits at once on SIGTERM: drain its listeners first, up to the embeddings route's
    // default timeout, so a long request in flight still gets its answer.
    drain: (graceMs) => drainEnvoy(at.adminPort, graceMs, at.netns),
    stopGraceMs: 600_000,
  };
}

/** Where a redis-server runs and what it keeps. */
export interface RedisPlacement {
  readonly name?: string;
  readonly bind: string;
  readonly port: number;
  /** Its working directory: the append-only file lives here. */
  readonly dir: string;
  readonly logFile: string;
  readonly netns?: string;
  /** host port of the primary, for a replica. */
  readonly replicaOf?: string;
  readonly extraArgs?: readonly string[];
}

/**
 * A redis-server that keeps everything it acknowledges: append-only file, fsync every second
 * (at most one second of writes lost on a power cut; none on a process crash).
 */
export function redisComponent(at: RedisPlacement): ComponentSpec {
  return {
    name: at.name ?? 'redis',
    command: 'redis-server',
    cwd: at.dir,
    logFile: at.logFile,
    netns: at.netns,
    args: [
      '--bind',
      at.bind,
      '--port',
      String(at.port),
      '--dir',
      at.dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--daemonize',
      'no',
      '--protected-mode',
      'no',
      ...(at.replicaOf ? ['--replicaof', ...at.replicaOf.split(' ')] : []),
      ...(at.extraArgs ?? []),
    ],
    env: minimalEnv(),
    ready: redisAnswers(probeHost(at.bind), at.port),
    readyTimeoutMs: 30_000,
    stopGraceMs: 10_000,
  };
}

/** PATH and HOME only: a component gets what its contract says, not whatever the caller had. */
export function minimalEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' };
}

// A service bound to every address is probed on loopback.
/** The address to reach a service listening on `host` (the wildcard means this machine). */
export function probeHost(host: string): string {
  return host === '0.0.0.0' ? '127.0.0.1' : host;
}

/** The log file of `name` in `logDir`. */
export const logFileOf = (logDir: string, name: string): string => join(logDir, `${name}.log`);
