/**
 * The whole gateway as child processes on free ports, for the Envoy and end-to-end suites:
 * a real Envoy (config rendered from envoy/envoy.yaml.tmpl), authz and the embedder, sharing
 * the Redis at REDIS_URL under a key prefix of their own. Everything the stack writes (logs,
 * certificates, the key-hash secret, the rendered config) lives in one temp directory.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderEnvoyConfig, type EnvoySettings } from '../../envoy/render.js';
import { freePort, readyOrStopped, startProcess, startTsProcess, waitFor, type ManagedProcess } from './process.js';
import { gatewayRequest, type GatewayRequest, type GatewayResponse } from './stack-client.js';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
export const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

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
}

/** A fresh temp directory with logs/, a CA and server certificate, and a key-hash secret. */
export function makeStackDir(): StackDir {
  const dir = mkdtempSync(join(tmpdir(), 'ctg-stack-'));
  const logDir = join(dir, 'logs');
  mkdirSync(logDir);
  execFileSync('bash', [join(repoRoot, 'scripts/certs.sh'), join(dir, 'tls')], { stdio: 'pipe' });
  const secretFile = join(dir, 'key-hash-secret');
  writeFileSync(secretFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  return {
    dir, logDir, secretFile,
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
  return { gateway: await freePort(), admin: await freePort(), authz: await freePort(), embedder: await freePort(), authzMetrics: await freePort() };
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolvePromise(true); });
    socket.once('error', () => resolvePromise(false));
  });
}

async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url);
  return res.ok;
}

/** Envoy settings a test may override (limits and timeouts); ports and files are the stack's. */
export type EnvoyOverrides = Partial<Omit<EnvoySettings, 'gatewayPort' | 'adminPort' | 'embedderPort' | 'authzPort' | 'tlsCertFile' | 'tlsKeyFile'>>;

/** Renders the bootstrap into the stack dir and starts Envoy; resolves once it is LIVE. */
export async function startEnvoy(dirs: StackDir, ports: StackPorts, authzTimeoutMs = 500, overrides: EnvoyOverrides = {}): Promise<ManagedProcess> {
  const configFile = join(dirs.dir, 'envoy.yaml');
  writeFileSync(configFile, renderEnvoyConfig({
    gatewayHost: '127.0.0.1', gatewayExtraHosts: ['::1'], gatewayPort: ports.gateway, adminPort: ports.admin,
    embedderHost: '127.0.0.1', embedderPort: ports.embedder,
    authzHost: '127.0.0.1', authzPort: ports.authz,
    tlsCertFile: dirs.certFile, tlsKeyFile: dirs.keyFile,
    authzTimeoutMs, embedderTimeoutS: 600, retryAfterSeconds: 1, ...overrides,
  }));
  const envoy = startProcess({
    name: 'envoy',
    command: envoyBinary(),
    // Hot restart shares memory between Envoys with one base id; tests run beside `make up`.
    // The access log reaches the file within a second (Envoy's default is ten).
    args: ['-c', configFile, '--disable-hot-restart', '--log-level', 'warn', '--file-flush-interval-msec', '1000'],
    env: {},
    logFile: join(dirs.logDir, 'envoy.log'),
  });
  return readyOrStopped(envoy, (async () => {
    await waitFor('Envoy to be LIVE', async () => (await fetch(`http://127.0.0.1:${ports.admin}/ready`)).ok, 30_000, [envoy]);
    await waitFor('the gateway listener', () => tcpOpen(ports.gateway), 10_000, [envoy]);
  })());
}

/** What authz, the embedder and the admin CLI need to agree on. */
export interface ServiceEnv {
  readonly modelDir: string;
  readonly modelId: string;
  readonly redisKeyPrefix: string;
}

function authzEnv(dirs: StackDir, ports: StackPorts, svc: ServiceEnv): Record<string, string> {
  return {
    AUTHZ_HOST: '127.0.0.1', AUTHZ_PORT: String(ports.authz), AUTHZ_METRICS_PORT: String(ports.authzMetrics),
    REDIS_URL: redisUrl, REDIS_KEY_PREFIX: svc.redisKeyPrefix,
    KEY_HASH_SECRET_FILE: dirs.secretFile, MODEL_ID: svc.modelId, MODEL_DIR: svc.modelDir,
  };
}

/** Starts authz (`overrides` replace variables, e.g. a dead REDIS_URL); resolves once it listens. */
export async function startAuthz(
  dirs: StackDir, ports: StackPorts, svc: ServiceEnv, overrides: Record<string, string> = {},
): Promise<ManagedProcess> {
  const authz = startTsProcess({
    name: 'authz', entry: join(repoRoot, 'authz/src/main.ts'), cwd: repoRoot,
    env: { ...authzEnv(dirs, ports, svc), ...overrides }, logFile: join(dirs.logDir, 'authz.log'),
  });
  return readyOrStopped(authz, waitFor('authz to listen', () => tcpOpen(ports.authz), 60_000, [authz]));
}

/** Starts the embedder (`overrides` replace variables); resolves once /ready answers (model loaded). */
export async function startEmbedder(
  dirs: StackDir, ports: StackPorts, svc: ServiceEnv, overrides: Record<string, string> = {},
): Promise<ManagedProcess> {
  const embedder = startTsProcess({
    name: 'embedder', entry: join(repoRoot, 'embedder/src/main.ts'), cwd: repoRoot,
    env: {
      EMBEDDER_HOST: '127.0.0.1', EMBEDDER_PORT: String(ports.embedder), AUTHZ_ADDRESS: `127.0.0.1:${ports.authz}`,
      MODEL_DIR: svc.modelDir, MODEL_ID: svc.modelId, ...overrides,
    },
    logFile: join(dirs.logDir, 'embedder.log'),
  });
  const ready = waitFor('the embedder to be ready', () => httpOk(`http://127.0.0.1:${ports.embedder}/ready`), 120_000, [embedder]);
  return readyOrStopped(embedder, ready);
}

/** The served model id: the manifest's id in `modelDir`. */
export function manifestModelId(modelDir: string): string {
  const file = join(modelDir, 'manifest.json');
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`make install\` (scripts/install-model.sh) first`);
  const id: unknown = JSON.parse(readFileSync(file, 'utf8')).id;
  if (typeof id !== 'string') throw new Error(`${modelDir}/manifest.json has no id`);
  return id;
}

export interface Stack {
  readonly dirs: StackDir;
  readonly ports: StackPorts;
  readonly svc: ServiceEnv;
  readonly baseUrl: string;
  readonly ca: Buffer;
  processes: { envoy: ManagedProcess; authz: ManagedProcess; embedder: ManagedProcess };
  request(req: GatewayRequest): Promise<GatewayResponse>;
  /** Runs the authz admin CLI against this stack's Redis prefix and secret; returns stdout. */
  admin(args: readonly string[]): string;
  /** Stops one service (the 503 tests); `start` brings it back. */
  stopService(name: 'authz' | 'embedder'): Promise<void>;
  startService(name: 'authz' | 'embedder', overrides?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts Redis-backed authz, the embedder on `modelDir`, and Envoy in front; all on free ports.
 * `env` goes to authz and the embedder (the tracing tests point them at their receiver).
 */
export async function startStack(modelDir = join(repoRoot, '.local/models/default'), envoy: EnvoyOverrides = {}, env: Record<string, string> = {}): Promise<Stack> {
  const dirs = makeStackDir();
  const ports = await pickPorts();
  const svc: ServiceEnv = {
    modelDir, modelId: manifestModelId(modelDir),
    redisKeyPrefix: `ctg-e2e-${randomBytes(6).toString('hex')}:`,
  };
  const started: ManagedProcess[] = [];
  // The embedder loads its model while authz and Envoy start.
  const embedderReady = startEmbedder(dirs, ports, svc, env);
  embedderReady.catch(() => undefined); // awaited below; this only keeps an early rejection handled
  try {
    const authz = await startAuthz(dirs, ports, svc, env);
    started.push(authz);
    const proxy = await startEnvoy(dirs, ports, 500, envoy);
    started.push(proxy);
    const embedder = await embedderReady;
    return makeStack(dirs, ports, svc, { envoy: proxy, authz, embedder });
  } catch (err) {
    // The embedder may still be loading; it stops itself if that fails, else stop it here.
    await embedderReady.then((p) => p.stop(), () => undefined);
    await Promise.all(started.map((p) => p.stop()));
    throw err;
  }
}

function makeStack(dirs: StackDir, ports: StackPorts, svc: ServiceEnv, processes: Stack['processes']): Stack {
  const ca = readFileSync(dirs.caFile);
  const stack: Stack = {
    dirs, ports, svc, ca, processes,
    baseUrl: `https://localhost:${ports.gateway}`,
    request: (req) => gatewayRequest({ host: 'localhost', port: ports.gateway, ca }, req),
    admin: (args) => execFileSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'authz/src/admin/cli.ts'), ...args], {
      cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...authzEnv(dirs, ports, svc) },
    }),
    async stopService(name) {
      await stack.processes[name].stop();
    },
    async startService(name, overrides = {}) {
      await stack.processes[name].stop();
      stack.processes[name] = name === 'authz'
        ? await startAuthz(dirs, ports, svc, overrides)
        : await startEmbedder(dirs, ports, svc, overrides);
    },
    async stop() {
      await Promise.all(Object.values(stack.processes).map((p) => p.stop()));
      deleteRedisKeys(svc.redisKeyPrefix);
      removeStackDir(dirs);
    },
  };
  return stack;
}

/** Removes every key under `prefix` (this run's only); never touches other prefixes. */
export function deleteRedisKeys(prefix: string): void {
  if (!/^ctg-(e2e|envoy)-[0-9a-f]+:$/.test(prefix)) throw new Error(`refusing to delete keys under ${prefix}`);
  const keys = execFileSync('redis-cli', ['-u', redisUrl, '--scan', '--pattern', `${prefix}*`], { encoding: 'utf8' })
    .split('\n').filter(Boolean);
  for (let i = 0; i < keys.length; i += 500) {
    execFileSync('redis-cli', ['-u', redisUrl, 'UNLINK', ...keys.slice(i, i + 500)], { stdio: 'ignore' });
  }
}
