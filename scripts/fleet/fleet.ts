/**
 * The fleet on this machine: 10 hosts in network namespaces — three Redis nodes (a primary and
 * two replicas, as deploy/'s StatefulSet), a Sentinel beside each, 2 authz, 3 embedders and 2
 * Envoy gateways — every process a supervised component of the stack module, restarted when it dies.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AUTHZ_DEFAULTS, firstValue, writeEnvoyConfig } from '../../envoy/render.js';
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
import { httpsOk, waitFor } from '../stack/probes.js';
import { redisAnswers } from '../stack/redis-probe.js';
import { ensureSecretFile } from '../stack/secrets.js';
import { DEFAULT_RESTART, Supervisor, type SupervisorEvent } from '../stack/supervisor.js';
import { createNetwork, type Host, type Network } from './netns.js';
import { startStarvation, type Starvation } from './starve.js';
import { CLUSTER_HOSTS, CLUSTER_PORT, clusterNodeComponent, clusterWhole, createCluster, type ClusterAccess } from './cluster.js';

const run = promisify(execFile);

export const HOSTS = [
  'redis-a',
  'redis-b',
  'redis-c',
  'authz-1',
  'authz-2',
  'embedder-1',
  'embedder-2',
  'embedder-3',
  'gateway-1',
  'gateway-2',
] as const;
/** The hosts with `--redis cluster`: six Redis Cluster nodes (cluster.ts) instead of three Redis nodes and Sentinels. */
export const CLUSTER_FLEET_HOSTS = [...CLUSTER_HOSTS, ...HOSTS.filter((h) => !h.startsWith('redis-'))] as const;
/** How the fleet runs Redis: a primary, two replicas and three Sentinels, or a Redis Cluster of three primaries with a replica each. */
export type RedisMode = 'sentinel' | 'cluster';
export const EMBEDDERS = ['embedder-1', 'embedder-2', 'embedder-3'] as const;
export const AUTHZ = ['authz-1', 'authz-2'] as const;
export const GATEWAYS = ['gateway-1', 'gateway-2'] as const;
/** Where the Redis nodes run; redis-a is the primary at the first start. */
export const REDIS_HOSTS = ['redis-a', 'redis-b', 'redis-c'] as const;
/** A Sentinel beside each Redis node (quorum 2 of 3). */
const SENTINEL_HOSTS = REDIS_HOSTS;
export const SENTINEL_NAME = 'ctg';
const PORTS = { redis: 6379, sentinel: 26379, authz: 9191, embedder: 8081, gateway: 8443, admin: 9901 } as const;

/** A running fleet. */
export interface Fleet {
  readonly network: Network;
  readonly dir: string;
  readonly ca: Buffer;
  readonly modelId: string;
  /** How Redis runs (--redis). */
  readonly redis: RedisMode;
  /** With `--redis cluster`: the nodes' hosts and password, to read the cluster from the root namespace. */
  readonly cluster?: ClusterAccess;
  /** The key prefix every service uses. */
  readonly redisKeyPrefix: string;
  /** Every component by name: redis-{a,b,c}, sentinel-{a,b,c} (redis-{a..f} with a cluster), authz-N, embedder-N, gateway-N. */
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
  /** The Redis nodes and Sentinels on one busy core under a CPU quota (starve.ts). */
  readonly starve?: boolean;
  /** Copy every component's log into `<keepLogsIn>/logs` when the fleet stops. */
  readonly keepLogsIn?: string;
  /** Sentinel (the default) or a Redis Cluster. */
  readonly redis?: RedisMode;
}

/** The passwords of the rehearsal: Redis's (requirepass, masterauth) and the Sentinels' own. */
interface Passwords {
  readonly redis: string;
  readonly sentinel: string;
}

/**
 * How the Sentinels decide, the same as deploy/'s (scripts/fleet/README.md, "Sentinel settings",
 * explains each value and what the fail-closed window is made of).
 */
export const SENTINEL_SETTINGS = [
  // No PONG for 1 s: this Sentinel thinks the primary is down (it pings every second). A busy
  // primary answers in tens of ms even throttled by a CPU quota (--starve), so 1 s is 10x that.
  'down-after-milliseconds <name> 1000',
  // A failed or split election is retried after 2x this (10 s), a promotion must be seen within
  // it (INFO every second during a failover: 5 chances on a slow node), and a leader waits this
  // long for votes.
  'failover-timeout <name> 5000',
  // One replica at a time resyncs with the new primary; the other keeps its copy meanwhile.
  'parallel-syncs <name> 1',
] as const;

/**
 * Writes refused (NOREPLICAS) unless a replica acknowledged the stream within the last 2 s: a
 * primary cut off from every replica (or one restarted as a primary before the Sentinels demote
 * it) stops taking writes it would lose. Replicas acknowledge every second and the lag is counted
 * in whole seconds, so 1 s refuses writes whenever one acknowledgement is a few ms late.
 */
export const MIN_REPLICAS = [
  '--min-replicas-to-write',
  '1',
  '--min-replicas-max-lag',
  '2',
  // Redis 7's defaults, written out because the split brain's safety rests on them: a primary
  // restarted from its file has a new replication ID, so a replica that attaches needs a full
  // sync, which starts only after this delay; until it is done the replica neither counts for
  // min-replicas-to-write nor answers WAIT, and Sentinel moves it to the promoted replica well
  // within 5 s (scripts/fleet/README.md, "nothing acknowledged is lost").
  '--repl-diskless-sync',
  'yes',
  '--repl-diskless-sync-delay',
  '5',
] as const;

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
      ...SENTINEL_SETTINGS.map((line) => `sentinel ${line.replace('<name>', SENTINEL_NAME)}`),
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
  const sentinels = SENTINEL_HOSTS.map((n) => `${h(n).address}:${PORTS.sentinel}`).join(' ');
  const redis = (name: (typeof REDIS_HOSTS)[number]) => {
    mkdirSync(join(dir, name), { recursive: true });
    const spec = redisComponent({
      name,
      bind: h(name).address,
      port: PORTS.redis,
      dir: join(dir, name),
      logFile: logFileOf(logDir, name),
      netns: h(name).netns,
      // Every node needs the password: clients and Sentinel log in, a replica logs in to its primary.
      extraArgs: ['--requirepass', passwords.redis, '--masterauth', passwords.redis, ...MIN_REPLICAS],
    });
    // Started (and restarted) through redis-start.sh: as the primary or a replica of the one the
    // Sentinels name, as a pod of deploy/'s StatefulSet starts; the script runs redis-server with these arguments.
    return {
      ...spec,
      command: 'sh',
      args: [join(repoRoot, 'scripts/fleet/redis-start.sh'), ...spec.args],
      env: {
        ...spec.env,
        SELF: h(name).address,
        SENTINELS: sentinels,
        SENTINEL_NAME,
        FIRST_PRIMARY: primary,
        PORT: String(PORTS.redis),
        // Under the node's readyTimeoutMs (30 s), and longer than a failover takes here.
        FAILOVER_WAIT_S: '20',
        START_AS_PRIMARY_FILE: startAsPrimaryFile(dir, name),
        REDISCLI_AUTH: passwords.sentinel,
      },
    };
  };
  // Bounded CPU on a small shared machine: one inference thread per embedder, one Envoy worker.
  const baseEnv = { LOG_LEVEL: 'warn', MODEL_SESSIONS: '1', ORT_INTRA_OP_THREADS: '1' };
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
      // A 200 only once a replica holds its usage record (Redis WAIT; none in 500 ms: void,
      // refund, 503): nothing acknowledged is lost when the primary dies (README, "Redis").
      baseEnv: {
        ...baseEnv,
        ...authzEnvExtra,
        EMBEDDER_DRAIN_NOTICE_MS: '2000',
        BATCH_LEASE_MS: '5000',
        BATCH_POLL_MS: '200',
        SETTLEMENT_MIN_REPLICAS: '1',
        SETTLEMENT_WAIT_MS: '500',
      },
    }),
  );
  const gateways = GATEWAYS.map((name) => gatewayComponent(net, h(name), dir, options.envoyBinary, ca));
  const redisNodes =
    options.redis === 'cluster'
      ? CLUSTER_HOSTS.map((n) => clusterNodeComponent(h(n), dir, logDir, passwords.redis))
      : [...REDIS_HOSTS.map(redis), ...SENTINEL_HOSTS.map((n) => sentinelComponent(h(n), primary, dir, logDir, passwords))];
  return [...redisNodes, ...authz, ...embedders, ...gateways];
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
    // The shipped deadline, as a platform team runs it: 500 ms (the test stacks') failed a Check
    // now and then in make test's fleet lane, where 16 processes share 2 cores with two lanes.
    authzTimeoutMs: AUTHZ_DEFAULTS.timeoutMs,
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
  const mode: RedisMode = options.redis ?? 'sentinel';
  const network = createNetwork(mode === 'cluster' ? CLUSTER_FLEET_HOSTS : HOSTS);
  const dir = mkdtempSync(join(tmpdir(), `ctg-fleet-${network.id}-`));
  const supervisors: Record<string, Supervisor> = {};
  let starvation: Starvation | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const order = [...GATEWAYS, ...EMBEDDERS, ...AUTHZ];
    await Promise.all(order.map((n) => supervisors[n]?.stop()));
    await Promise.all(Object.values(supervisors).map((s) => s.stop()));
    network.destroy();
    await starvation?.stop();
    if (options.keepLogsIn) cpSync(join(dir, 'logs'), join(options.keepLogsIn, 'logs'), { recursive: true });
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
    const redisAuth: Record<string, string> = mode === 'cluster' ? {} : { REDIS_SENTINEL_PASSWORD_FILE: sentinelPasswordFile };
    const address = (n: string) => (network.hosts[n] as Host).address;
    // With a cluster: the embedders log in as their own user (settlement only), which authz sets
    // on every node, as production runs them; the URL's password is every node's.
    const settlementPasswordFile = join(dir, 'settlement-password');
    writeFileSync(settlementPasswordFile, randomBytes(16).toString('hex'), { mode: 0o600 });
    const redisPlacement =
      mode === 'cluster'
        ? {
            redisClusterNodes: CLUSTER_HOSTS.map((n) => `${address(n)}:${CLUSTER_PORT}`).join(','),
            settlementUser: { username: 'ctg-fleet-embedder', passwordFile: settlementPasswordFile },
          }
        : { redisSentinels: sentinels, redisSentinelName: SENTINEL_NAME };
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
      ...redisPlacement,
    };
    const specs = fleetComponents(network, dir, svc, options, ca, passwords, redisAuth);
    if (options.starve) starvation = startStarvation(network.id, (network.hosts['redis-c'] as Host).netns);
    const onEvent = (event: SupervisorEvent) => {
      // Every start of a Redis node or Sentinel (a restart too) runs on the starved core.
      if (starvation && event.kind === 'started' && /^(redis|sentinel)-/.test(event.name)) starvation.hold(event.pid);
      options.onEvent?.(event);
    };
    for (const spec of specs) supervisors[spec.name] = new Supervisor(spec, DEFAULT_RESTART, onEvent);
    const start = (names: string[]) => Promise.all(names.map((n) => (supervisors[n] as Supervisor).start()));
    const cluster: ClusterAccess | undefined = mode === 'cluster' ? { hosts: network.hosts, password: passwords.redis } : undefined;
    if (cluster) {
      await start([...CLUSTER_HOSTS]);
      await createCluster(cluster);
      // Every primary takes writes only with its replica in sync (min-replicas-to-write 1):
      // authz loads its functions on every primary at start, so it starts once the cluster is whole.
      await waitFor('the Redis Cluster to be whole (3 primaries, each with a replica in sync)', () => clusterWhole(cluster), 60_000);
    } else {
      await start(['redis-a']);
      await start(['redis-b', 'redis-c', 'sentinel-a', 'sentinel-b', 'sentinel-c']);
      // The primary takes writes only with a replica in sync (MIN_REPLICAS): authz loads its
      // functions at start, so it starts once both replicas are.
      const primaryAddress = (network.hosts['redis-a'] as Host).address;
      await waitFor(
        'both replicas to sync with redis-a',
        async () => (await onlineReplicas(primaryAddress, passwords.redis)) === 2,
        60_000,
      );
    }
    await start([...AUTHZ, ...EMBEDDERS]);
    await start([...GATEWAYS]);
    return {
      network,
      dir,
      ca,
      modelId: svc.modelId,
      redis: mode,
      ...(cluster ? { cluster } : {}),
      redisKeyPrefix: svc.redisKeyPrefix as string,
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

/** While this file exists, the node restarts as a primary whatever the Sentinels say (redis-start.sh). */
export function startAsPrimaryFile(dir: string, name: string): string {
  return join(dir, name, 'start-as-primary');
}

/** How many replicas the Redis at `address` has in sync (INFO replication: state=online). */
async function onlineReplicas(address: string, password: string): Promise<number> {
  const { stdout } = await run('redis-cli', ['-h', address, '-p', String(PORTS.redis), 'INFO', 'replication'], {
    env: { ...minimalEnv(), REDISCLI_AUTH: password },
    timeout: 2_000,
  });
  return stdout.split('\n').filter((l) => /^slave\d+:.*state=online/.test(l)).length;
}

/** A gateway's caller-token SDS file (its Envoy watches it; the rotation scenario rewrites it). */
export function callerSdsFile(dir: string, gateway: string): string {
  return join(dir, `caller-token-${gateway}`, 'authz-caller-token.sds.yaml');
}

/** Where a gateway listens (for the load client in the root namespace). */
export const gatewayPort = PORTS.gateway;
export const adminPort = PORTS.admin;
export const sentinelPort = PORTS.sentinel;
