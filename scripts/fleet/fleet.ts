/**
 * The fleet on this machine: 10 hosts in network namespaces — Redis primary and replica, three
 * Sentinels (one beside each Redis, one alone), 2 authz, 3 embedders and 2 Envoy gateways —
 * every process a supervised component of the stack module, restarted when it dies.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValue, writeEnvoyConfig } from '../../envoy/render.js';
import { readManifestId } from '../../contract/model-manifest.js';
import {
  authzComponent,
  authzEnv,
  embedderComponent,
  envoyComponent,
  logFileOf,
  minimalEnv,
  redisComponent,
  repoRoot,
  type ComponentSpec,
  type ServiceContract,
} from '../stack/components.js';
import { httpsOk } from '../stack/probes.js';
import { redisAnswers } from '../stack/redis-probe.js';
import { ensureSecretFile } from '../stack/secrets.js';
import { DEFAULT_RESTART, Supervisor, type SupervisorEvent } from '../stack/supervisor.js';
import { createNetwork, type Host, type Network } from './netns.js';

export const HOSTS = [
  'redis-a',
  'redis-b',
  'sentinel-c',
  'authz-1',
  'authz-2',
  'embedder-1',
  'embedder-2',
  'embedder-3',
  'gateway-1',
  'gateway-2',
] as const;
export const EMBEDDERS = ['embedder-1', 'embedder-2', 'embedder-3'] as const;
export const AUTHZ = ['authz-1', 'authz-2'] as const;
export const GATEWAYS = ['gateway-1', 'gateway-2'] as const;
const SENTINEL_HOSTS = ['redis-a', 'redis-b', 'sentinel-c'] as const;
export const SENTINEL_NAME = 'ctg';
const PORTS = { redis: 6379, sentinel: 26379, authz: 9191, embedder: 8081, gateway: 8443, admin: 9901 } as const;

/** A running fleet. */
export interface Fleet {
  readonly network: Network;
  readonly dir: string;
  readonly ca: Buffer;
  readonly modelId: string;
  /** Every component by name: redis-a, redis-b, sentinel-{a,b,c}, authz-N, embedder-N, gateway-N. */
  readonly supervisors: Readonly<Record<string, Supervisor>>;
  /** The environment the admin CLI needs (Sentinels, prefix, secret) from the root namespace. */
  readonly adminEnv: Readonly<Record<string, string>>;
  /** The Sentinels' own password (redis-cli -a), as production runs them: both Redis and Sentinel require one. */
  readonly sentinelPassword: string;
  host(name: string): Host;
  /** Stops every component and deletes the network; safe to call more than once. */
  stop(): Promise<void>;
}

export interface FleetOptions {
  readonly modelDir: string;
  readonly envoyBinary: string;
  readonly onEvent?: (event: SupervisorEvent) => void;
  /** Called as soon as there is something to clean up, with how to stop it (a signal may come mid-start). */
  readonly onStopper?: (stopper: { stop: () => Promise<void>; network: Network }) => void;
}

/** The passwords of the rehearsal: Redis's (requirepass, masterauth) and the Sentinels' own. */
interface Passwords {
  readonly redis: string;
  readonly sentinel: string;
}

function sentinelComponent(host: Host, primary: string, dir: string, logDir: string, passwords: Passwords): ComponentSpec {
  const conf = join(dir, `sentinel-${host.name}.conf`);
  // Sentinel rewrites its config file as it learns the topology, so each gets its own. It logs
  // in to Redis (auth-pass), requires a password of its clients (requirepass) and uses that one
  // with the other Sentinels (sentinel-pass), as deploy/redis/ configures production.
  writeFileSync(
    conf,
    [
      `port ${PORTS.sentinel}`,
      `bind ${host.address}`,
      'protected-mode no',
      `dir ${dir}`,
      `requirepass ${passwords.sentinel}`,
      `sentinel sentinel-pass ${passwords.sentinel}`,
      `sentinel monitor ${SENTINEL_NAME} ${primary} ${PORTS.redis} 2`,
      `sentinel auth-pass ${SENTINEL_NAME} ${passwords.redis}`,
      `sentinel down-after-milliseconds ${SENTINEL_NAME} 1000`,
      `sentinel failover-timeout ${SENTINEL_NAME} 5000`,
      `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return {
    name: `sentinel-${host.name.split('-')[1]}`,
    command: 'redis-sentinel',
    args: [conf],
    env: minimalEnv(),
    cwd: dir,
    logFile: logFileOf(logDir, `sentinel-${host.name}`),
    netns: host.netns,
    ready: redisAnswers(host.address, PORTS.sentinel),
    readyTimeoutMs: 20_000,
    stopGraceMs: 5_000,
  };
}

function fleetComponents(
  net: Network,
  dir: string,
  svc: ServiceContract,
  options: FleetOptions,
  ca: Buffer,
  passwords: Passwords,
  authzEnvExtra: Record<string, string>,
): ComponentSpec[] {
  const logDir = join(dir, 'logs');
  const h = (name: string) => net.hosts[name] as Host;
  const primary = h('redis-a').address;
  const redis = (name: 'redis-a' | 'redis-b', replicaOf?: string) => {
    mkdirSync(join(dir, name), { recursive: true });
    return redisComponent({
      name,
      bind: h(name).address,
      port: PORTS.redis,
      dir: join(dir, name),
      logFile: logFileOf(logDir, name),
      netns: h(name).netns,
      ...(replicaOf ? { replicaOf: `${replicaOf} ${PORTS.redis}` } : {}),
      // Both need the password: clients and Sentinel log in, a replica logs in to its primary.
      extraArgs: ['--requirepass', passwords.redis, '--masterauth', passwords.redis],
    });
  };
  // Bounded CPU on a small shared machine: one inference thread per embedder, one Envoy worker.
  const baseEnv = { LOG_LEVEL: 'warn', ORT_INTRA_OP_THREADS: '1' };
  const authz = AUTHZ.map((name) =>
    authzComponent(svc, {
      name,
      host: h(name).address,
      port: PORTS.authz,
      logFile: logFileOf(logDir, name),
      netns: h(name).netns,
      baseEnv: { ...baseEnv, ...authzEnvExtra },
    }),
  );
  // Every embedder settles on Redis itself, following the primary through the sentinels (with their password).
  const embedders = EMBEDDERS.map((name) =>
    embedderComponent(svc, {
      name,
      host: h(name).address,
      port: PORTS.embedder,
      logFile: logFileOf(logDir, name),
      netns: h(name).netns,
      // Restarted at the same address: out of Envoy's rotation (health check every second) before
      // it stops listening, so its replacement is never sent requests while its model loads.
      // A dead embedder's batch segments are taken over after 5 s.
      baseEnv: { ...baseEnv, ...authzEnvExtra, EMBEDDER_DRAIN_NOTICE_MS: '2000', BATCH_LEASE_MS: '5000', BATCH_POLL_MS: '200' },
    }),
  );
  const gateways = GATEWAYS.map((name) => gatewayComponent(net, h(name), dir, options.envoyBinary, ca));
  return [
    redis('redis-a'),
    redis('redis-b', primary),
    ...SENTINEL_HOSTS.map((n) => sentinelComponent(h(n), primary, dir, logDir, passwords)),
    ...authz,
    ...embedders,
    ...gateways,
  ];
}

function gatewayComponent(net: Network, host: Host, dir: string, envoyBinary: string, ca: Buffer): ComponentSpec {
  const configFile = join(dir, `envoy-${host.name}.yaml`);
  const endpoints = (names: readonly string[], port: number) => names.map((n) => ({ host: (net.hosts[n] as Host).address, port }));
  // Each gateway its own SDS file for the caller token (the rotation scenario rewrites them).
  writeEnvoyConfig(configFile, {
    gatewayHost: host.address,
    gatewayPort: PORTS.gateway,
    adminPort: PORTS.admin,
    embedderHost: '',
    embedderPort: 0,
    authzHost: '',
    authzPort: 0,
    embedderEndpoints: endpoints(EMBEDDERS, PORTS.embedder),
    authzEndpoints: endpoints(AUTHZ, PORTS.authz),
    tlsCertFile: join(dir, 'tls/server.pem'),
    tlsKeyFile: join(dir, 'tls/server-key.pem'),
    authzTimeoutMs: 500,
    embedderTimeoutS: 60,
    retryAfterSeconds: 1,
    authzCallerToken: firstValue(readFileSync(join(dir, 'authz-caller-token'), 'utf8')),
    authzCallerSdsFile: callerSdsFile(dir, host.name),
  });
  const spec = envoyComponent({
    name: host.name,
    binary: envoyBinary,
    configFile,
    adminPort: PORTS.admin,
    gatewayHost: host.address,
    gatewayPort: PORTS.gateway,
    logFile: logFileOf(join(dir, 'logs'), host.name),
    netns: host.netns,
    concurrency: 1,
  });
  return {
    ...spec,
    // A drain closes the listener after 2 s (not Envoy's default 10 minutes); clients then go elsewhere.
    args: [...spec.args, '--drain-time-s', '2', '--drain-strategy', 'immediate'],
    // The admin port is on the namespace's loopback: readiness is the gateway's own /health over TLS.
    ready: httpsOk(`https://${host.address}:${PORTS.gateway}/health`, ca),
  };
}

/** Creates the network and starts every component (Redis and Sentinels first, the gateways last). */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const network = createNetwork(HOSTS);
  const dir = mkdtempSync(join(tmpdir(), `ctg-fleet-${network.id}-`));
  const supervisors: Record<string, Supervisor> = {};
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const order = [...GATEWAYS, ...EMBEDDERS, ...AUTHZ];
    await Promise.all(order.map((n) => supervisors[n]?.stop()));
    await Promise.all(Object.values(supervisors).map((s) => s.stop()));
    network.destroy();
    rmSync(dir, { recursive: true, force: true });
  };
  options.onStopper?.({ stop, network });
  try {
    execFileSync('bash', [join(repoRoot, 'scripts/certs.sh'), join(dir, 'tls')], { stdio: 'pipe' });
    const ca = readFileSync(join(dir, 'tls/ca.pem'));
    const secretFile = join(dir, 'key-hash-secret');
    const grantSecretFile = join(dir, 'grant-secret');
    writeFileSync(secretFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    // The grant secret, Envoy's caller token for authz and authz's metrics token (the stack's shared secrets).
    for (const name of ['grant-secret', 'authz-caller-token', 'metrics-token', 'batch-kek']) ensureSecretFile(join(dir, name));
    const sentinels = SENTINEL_HOSTS.map((n) => `${(network.hosts[n] as Host).address}:${PORTS.sentinel}`).join(',');
    const passwords: Passwords = { redis: randomBytes(16).toString('hex'), sentinel: randomBytes(16).toString('hex') };
    const sentinelPasswordFile = join(dir, 'sentinel-password');
    writeFileSync(sentinelPasswordFile, passwords.sentinel, { mode: 0o600 });
    const redisAuth = { REDIS_SENTINEL_PASSWORD_FILE: sentinelPasswordFile };
    const svc: ServiceContract = {
      modelDir: options.modelDir,
      modelId: readManifestId(options.modelDir),
      keyHashSecretFile: secretFile,
      grantSecretFile,
      authzCallerTokenFile: join(dir, 'authz-caller-token'),
      metricsTokenFile: join(dir, 'metrics-token'),
      // The Batch API: the embedders share one store directory (one host), the key apart from it.
      batchKekFile: join(dir, 'batch-kek'),
      batchStore: `dir:${join(dir, 'batch')}`,
      // With Sentinels, the URL's host is unused; its password is the primary's (contract/redis-target.ts).
      redisUrl: `redis://:${passwords.redis}@${(network.hosts['redis-a'] as Host).address}:${PORTS.redis}`,
      redisKeyPrefix: 'ctg-fleet:',
      redisSentinels: sentinels,
      redisSentinelName: SENTINEL_NAME,
    };
    const specs = fleetComponents(network, dir, svc, options, ca, passwords, redisAuth);
    for (const spec of specs) supervisors[spec.name] = new Supervisor(spec, DEFAULT_RESTART, options.onEvent);
    const start = (names: string[]) => Promise.all(names.map((n) => (supervisors[n] as Supervisor).start()));
    await start(['redis-a']);
    await start(['redis-b', 'sentinel-a', 'sentinel-b', 'sentinel-c']);
    await start([...AUTHZ, ...EMBEDDERS]);
    await start([...GATEWAYS]);
    return {
      network,
      dir,
      ca,
      modelId: svc.modelId,
      supervisors,
      stop,
      sentinelPassword: passwords.sentinel,
      adminEnv: { ...minimalEnv(), ...authzEnv(svc, '127.0.0.1', PORTS.authz), ...redisAuth, LOG_LEVEL: 'warn' },
      host: (name) => network.hosts[name] as Host,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A gateway's caller-token SDS file (its Envoy watches it; the rotation scenario rewrites it). */
export function callerSdsFile(dir: string, gateway: string): string {
  return join(dir, `caller-token-${gateway}`, 'authz-caller-token.sds.yaml');
}

/** Where a gateway listens (for the load client in the root namespace). */
export const gatewayPort = PORTS.gateway;
export const adminPort = PORTS.admin;
export const sentinelPort = PORTS.sentinel;
