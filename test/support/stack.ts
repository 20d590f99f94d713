/**
 * The whole gateway as supervised child processes on free ports, for the Envoy and end-to-end
 * suites: a thin layer on the stack module (scripts/stack/), sharing the Redis at REDIS_URL
 * under a key prefix of their own. Everything the stack writes (logs, certificates, the
 * key-hash secret, the rendered config) lives in one temp directory.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readManifestId } from '../../contract/model-manifest.js';
import { settlementFunctionNames } from '../../contract/redis/settlement-keys.js';
import { batchFunctionNames } from '../../contract/redis/batch-keys.js';
import {
  authzComponent,
  authzEnv,
  embedderComponent,
  envoyComponent,
  repoRoot,
  type ServiceContract,
} from '../../scripts/stack/components.js';
import { startLocalStack, writeLocalEnvoyConfig, type LocalStackSettings } from '../../scripts/stack/local-stack.js';
import { ensureSecretFile } from '../../scripts/stack/secrets.js';
import { Supervisor } from '../../scripts/stack/supervisor.js';
import { freePort } from './process.js';
import { TEST_REDIS_URL } from './redis-store.js';
import { gatewayRequest, type GatewayRequest, type GatewayResponse } from './stack-client.js';

export { repoRoot };
/** The Redis the stacks run on: the tests' one (redis-store.ts). */
export const redisUrl = TEST_REDIS_URL;

let envoyPath: string | undefined;

/** The Envoy 1.40 binary, installed by scripts/install-envoy.sh when needed (once per process). */
export function envoyBinary(): string {
  envoyPath ??= execFileSync('bash', [join(repoRoot, 'scripts/install-envoy.sh')], { encoding: 'utf8' }).trim();
  return envoyPath;
}

export interface StackPorts {
  readonly gateway: number;
  readonly admin: number;
  readonly authz: number;
  readonly embedder: number;
  /** authz's internal GET /metrics. */
  readonly authzMetrics: number;
}

export interface StackDir {
  readonly dir: string;
  readonly logDir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly secretFile: string;
  readonly grantSecretFile: string;
  /** The embedder's own Redis user for this stack (removed when it stops). */
  readonly settlementUser: { readonly username: string; readonly passwordFile: string };
  /** The caller token Envoy sends authz, and the token authz's GET /metrics requires. */
  readonly callerTokenFile: string;
  readonly metricsTokenFile: string;
  /** The Batch API's key-encryption key, and its store directory (apart from each other). */
  readonly batchKekFile: string;
  readonly batchStoreDir: string;
}

/** A fresh temp directory with logs/, a CA and server certificate, and a key-hash secret. */
export function makeStackDir(): StackDir {
  const dir = mkdtempSync(join(tmpdir(), 'ctg-stack-'));
  const logDir = join(dir, 'logs');
  mkdirSync(logDir);
  execFileSync('bash', [join(repoRoot, 'scripts/certs.sh'), join(dir, 'tls')], { stdio: 'pipe' });
  const secretFile = join(dir, 'key-hash-secret');
  const grantSecretFile = join(dir, 'grant-secret');
  const passwordFile = join(dir, 'redis-embedder-password');
  const callerTokenFile = join(dir, 'authz-caller-token');
  const metricsTokenFile = join(dir, 'metrics-token');
  const batchKekFile = join(dir, 'batch-kek');
  for (const file of [secretFile, grantSecretFile, passwordFile, callerTokenFile, metricsTokenFile, batchKekFile]) ensureSecretFile(file);
  return {
    dir,
    logDir,
    secretFile,
    grantSecretFile,
    callerTokenFile,
    metricsTokenFile,
    batchKekFile,
    batchStoreDir: join(dir, 'batch'),
    settlementUser: { username: `ctg-embedder-test-${randomBytes(6).toString('hex')}`, passwordFile },
    caFile: join(dir, 'tls/ca.pem'),
    certFile: join(dir, 'tls/server.pem'),
    keyFile: join(dir, 'tls/server-key.pem'),
  };
}

/** Deletes a stack directory (logs included) once its processes are gone. */
export function removeStackDir(dirs: StackDir): void {
  rmSync(dirs.dir, { recursive: true, force: true });
}

/** Free ports for every component. */
export async function pickPorts(): Promise<StackPorts> {
  return {
    gateway: await freePort(),
    admin: await freePort(),
    authz: await freePort(),
    embedder: await freePort(),
    authzMetrics: await freePort(),
  };
}

/** What authz, the embedder and the admin CLI need to agree on. */
export interface ServiceEnv {
  readonly modelDir: string;
  readonly modelId: string;
  readonly redisKeyPrefix: string;
}

function contract(dirs: StackDir, svc: ServiceEnv): ServiceContract {
  return {
    ...svc,
    keyHashSecretFile: dirs.secretFile,
    grantSecretFile: dirs.grantSecretFile,
    redisUrl,
    settlementUser: dirs.settlementUser,
    authzCallerTokenFile: dirs.callerTokenFile,
    metricsTokenFile: dirs.metricsTokenFile,
    batchKekFile: dirs.batchKekFile,
    batchStore: `dir:${dirs.batchStoreDir}`,
  };
}

/** Envoy settings a test may override (limits and timeouts); ports and files are the stack's. */
export type EnvoyOverrides = NonNullable<LocalStackSettings['envoy']>;

function settings(dirs: StackDir, ports: StackPorts, svc: ServiceEnv, envoy: EnvoyOverrides = {}): LocalStackSettings {
  return {
    svc: contract(dirs, svc),
    logDir: dirs.logDir,
    envoyConfigFile: join(dirs.dir, 'envoy.yaml'),
    envoyBinary: envoyBinary(),
    gateway: { host: '127.0.0.1', port: ports.gateway },
    envoyAdminPort: ports.admin,
    authz: { host: '127.0.0.1', port: ports.authz },
    embedder: { host: '127.0.0.1', port: ports.embedder },
    // Dual-stack on loopback, as the default listener is on every address.
    tls: { certFile: dirs.certFile, keyFile: dirs.keyFile },
    // No new-key budget: these tests send fresh and junk keys in bursts and assert authz's own
    // answers (401, 429) to them; test/envoy/new-key-budget.test.ts tests the budget, and the
    // stacks of `make up` (the README's and clients' tests) run the shipped default.
    envoy: { authzTimeoutMs: 500, gatewayExtraHosts: ['::1'], newKeyRps: 0, ...envoy },
  };
}

// A test that stops a service means it: a crash is reported, not papered over by a restart.
const NO_RESTART = { initialDelayMs: 0, maxDelayMs: 0, crashLimit: 0, windowMs: 1 };

async function started(spec: Supervisor['spec']): Promise<Supervisor> {
  const sup = new Supervisor(spec, NO_RESTART);
  await sup.start();
  return sup;
}

/** Renders the bootstrap into the stack dir (`envoy`: limits a test sets) and starts Envoy; resolves once it is LIVE. */
export async function startEnvoy(dirs: StackDir, ports: StackPorts, authzTimeoutMs = 500, envoy: EnvoyOverrides = {}): Promise<Supervisor> {
  const s = settings(dirs, ports, { modelDir: '', modelId: '', redisKeyPrefix: '' }, { authzTimeoutMs, ...envoy });
  writeLocalEnvoyConfig(s);
  return started(
    envoyComponent({
      binary: s.envoyBinary,
      configFile: s.envoyConfigFile,
      adminPort: ports.admin,
      gatewayHost: '127.0.0.1',
      gatewayPort: ports.gateway,
      logFile: join(dirs.logDir, 'envoy.log'),
    }),
  );
}

/** Starts authz (`overrides` replace variables, e.g. a dead REDIS_URL); resolves once it listens. */
export function startAuthz(
  dirs: StackDir,
  ports: StackPorts,
  svc: ServiceEnv,
  overrides: Record<string, string> = {},
): Promise<Supervisor> {
  return started(
    authzComponent(contract(dirs, svc), {
      host: '127.0.0.1',
      port: ports.authz,
      logFile: join(dirs.logDir, 'authz.log'),
      overrides: { ...authzMetricsEnv(ports), ...overrides },
    }),
  );
}

/** Starts the embedder (`overrides` replace variables); resolves once /ready answers (model loaded). */
export function startEmbedder(
  dirs: StackDir,
  ports: StackPorts,
  svc: ServiceEnv,
  overrides: Record<string, string> = {},
): Promise<Supervisor> {
  return started(
    embedderComponent(contract(dirs, svc), {
      host: '127.0.0.1',
      port: ports.embedder,
      logFile: join(dirs.logDir, 'embedder.log'),
      overrides,
    }),
  );
}

/** The served model id: the manifest's id in `modelDir` (read by the embedder's manifest module). */
export function manifestModelId(modelDir: string): string {
  try {
    return readManifestId(modelDir);
  } catch (err) {
    throw new Error(`${(err as Error).message}: run \`make install\` (scripts/install-model.sh) first`);
  }
}

export interface Stack {
  readonly dirs: StackDir;
  readonly ports: StackPorts;
  readonly svc: ServiceEnv;
  readonly baseUrl: string;
  readonly ca: Buffer;
  processes: { envoy: Supervisor; authz: Supervisor; embedder: Supervisor };
  request(req: GatewayRequest): Promise<GatewayResponse>;
  /** Runs the authz admin CLI against this stack's Redis prefix and secret; returns stdout. */
  admin(args: readonly string[]): string;
  /** Stops one service (the 503 tests); `start` brings it back. */
  stopService(name: 'authz' | 'embedder'): Promise<void>;
  startService(name: 'authz' | 'embedder', overrides?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

// authz's metrics listener on this stack's own port (stacks run side by side).
function authzMetricsEnv(ports: StackPorts): Record<string, string> {
  return { AUTHZ_METRICS_PORT: String(ports.authzMetrics) };
}

/**
 * Starts Redis-backed authz, the embedder on `modelDir`, and Envoy in front; all on free ports.
 * `env` goes to authz and the embedder (the tracing tests point them at their receiver).
 */
export async function startStack(
  modelDir = join(repoRoot, '.local/models/default'),
  envoy: EnvoyOverrides = {},
  env: Record<string, string> = {},
): Promise<Stack> {
  const dirs = makeStackDir();
  const ports = await pickPorts();
  const svc: ServiceEnv = { modelDir, modelId: manifestModelId(modelDir), redisKeyPrefix: `ctg-e2e-${randomBytes(6).toString('hex')}:` };
  const overrides = { authz: { ...authzMetricsEnv(ports), ...env }, embedder: env };
  const local = await startLocalStack({ ...settings(dirs, ports, svc, envoy), overrides, restart: NO_RESTART });
  return makeStack(dirs, ports, svc, { ...local.supervisors });
}

function makeStack(dirs: StackDir, ports: StackPorts, svc: ServiceEnv, processes: Stack['processes']): Stack {
  const ca = readFileSync(dirs.caFile);
  const stack: Stack = {
    dirs,
    ports,
    svc,
    ca,
    processes,
    baseUrl: `https://localhost:${ports.gateway}`,
    request: (req) => gatewayRequest({ host: 'localhost', port: ports.gateway, ca }, req),
    admin: (args) =>
      execFileSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'admin/src/cli/main.ts'), ...args], {
        cwd: repoRoot,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...authzEnv(contract(dirs, svc), '127.0.0.1', ports.authz) },
      }),
    async stopService(name) {
      await stack.processes[name].stop();
    },
    async startService(name, overrides = {}) {
      await stack.processes[name].stop();
      stack.processes[name] =
        name === 'authz' ? await startAuthz(dirs, ports, svc, overrides) : await startEmbedder(dirs, ports, svc, overrides);
    },
    async stop() {
      await stack.processes.envoy.stop();
      await Promise.all([stack.processes.authz.stop(), stack.processes.embedder.stop()]);
      deleteRedisKeys(svc.redisKeyPrefix);
      // authz made the embedder's user; the stack's prefix's libraries go with its keys.
      execFileSync('redis-cli', ['-u', redisUrl, 'ACL', 'DELUSER', dirs.settlementUser.username], { stdio: 'ignore' });
      removeStackDir(dirs);
    },
  };
  return stack;
}

/** Removes every key under `prefix` (this run's only); never touches other prefixes. */
export function deleteRedisKeys(prefix: string, url = redisUrl): void {
  if (!/^ctg-(e2e|envoy|fleet)-[0-9a-f]+:$/.test(prefix)) throw new Error(`refusing to delete keys under ${prefix}`);
  const keys = execFileSync('redis-cli', ['-u', url, '--scan', '--pattern', `${prefix}*`], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  for (let i = 0; i < keys.length; i += 500) {
    execFileSync('redis-cli', ['-u', url, 'UNLINK', ...keys.slice(i, i + 500)], { stdio: 'ignore' });
  }
  for (const library of [settlementFunctionNames(prefix).library, batchFunctionNames(prefix).library])
    execFileSync('redis-cli', ['-u', url, 'FUNCTION', 'DELETE', library], { stdio: 'ignore' });
}
