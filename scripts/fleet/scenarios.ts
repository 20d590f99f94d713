/**
 * The failure scenarios `make fleet` measures under load, each an action on the running fleet
 * that returns once the fleet is whole again: embedder kill -9 and rolling restart, authz kill -9
 * and rolling restart, one Envoy drained and restarted, and the Redis primary killed (Sentinel
 * promotes a replica; the old primary returns as a replica), and, when asked for, killed and
 * restarted as a primary before Sentinel demotes it.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { Supervisor } from '../stack/supervisor.js';
import { waitFor } from '../stack/probes.js';
import { AUTHZ, EMBEDDERS, REDIS_HOSTS, adminPort, startAsPrimaryFile, type Fleet, type RedisMode } from './fleet.js';
import { clusterFailover } from './cluster.js';
import { LOAD_ORGS } from './load.js';
import { failoverStarted, redisHostAt, sentinelPrimary, sentinelsReady, shortenTilt } from './sentinel.js';
import { rotateSecrets } from './rotation-scenario.js';

export interface Scenario {
  readonly name: string;
  /** Resolves once the fleet is whole again, with what a Redis scenario measured. */
  readonly run: (fleet: Fleet) => Promise<FaultFacts | undefined>;
  /** Run only when --only names it (not in a plain `make fleet`). */
  readonly optional?: boolean;
  /** Run only on a fleet whose Redis runs this way (the Sentinel scenarios, the cluster's). */
  readonly redis?: RedisMode;
}

/** A scenario that measures nothing of its own. */
const plain =
  (action: (fleet: Fleet) => Promise<void>) =>
  async (fleet: Fleet): Promise<undefined> => {
    await action(fleet);
    return undefined;
  };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sup = (fleet: Fleet, name: string) => fleet.supervisors[name] as Supervisor;

/** Kills a component with SIGKILL and waits until its supervisor has it ready again. */
async function killAndAwaitRestart(fleet: Fleet, name: string): Promise<void> {
  const s = sup(fleet, name);
  const before = s.pid;
  s.signal('SIGKILL');
  await waitFor(`${name} to be restarted`, async () => s.state === 'ready' && s.pid !== undefined && s.pid !== before, 120_000);
}

// After a replica is back, Envoy's next health check (every second) returns it to rotation.
const BACK_IN_ROTATION_MS = 1_500;

async function rolling(fleet: Fleet, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await sup(fleet, name).restart();
    await sleep(BACK_IN_ROTATION_MS);
  }
}

/** What a Redis scenario measured, for the report. */
export interface FaultFacts {
  /** When the primary was killed (ms since the epoch). */
  readonly faultAt: number;
  /** From the kill until a Sentinel named another primary. */
  readonly promotionMs: number;
  /** The 1-minute load average when the primary was killed. */
  readonly loadAverage: number;
  /** Redis Cluster: the organizations whose slots were on the killed primary, the host killed and the one promoted. */
  readonly orgs?: readonly string[];
  readonly killed?: string;
  readonly promoted?: string;
}

/**
 * Kills the Redis primary (SIGKILL: the host is lost) once every Sentinel knows both replicas
 * and the other Sentinels, and measures how long until a replica is promoted.
 *
 * - `after-promotion`: the old primary stays down until then, and comes back as a replica of
 *   the new one (redis-start.sh asks the Sentinels).
 * - `before-demotion`: it comes back as soon as the Sentinels hold it down (o_down), as the
 *   primary it was (a node restarted with its old role), while the Sentinels still name it: a
 *   split brain until they promote a replica and demote it. Clients that reconnect meanwhile
 *   write to it; MIN_REPLICAS (fleet.ts) and the embedder's WAIT must keep every 200 it
 *   acknowledges out of what the demotion throws away.
 */
async function redisFailover(fleet: Fleet, restart: 'after-promotion' | 'before-demotion'): Promise<FaultFacts> {
  await shortenTilt(fleet);
  // Bounded: a Sentinel learns replicas from the primary's INFO every 10 s.
  await waitFor('every Sentinel to know both replicas and the other Sentinels', () => sentinelsReady(fleet), 60_000);
  const before = await sentinelPrimary(fleet);
  const primaryName = redisHostAt(fleet, before);
  const primary = sup(fleet, primaryName);
  const loadAverage = loadavg()[0] ?? 0;
  const faultAt = Date.now();
  primary.signal('SIGKILL');
  await primary.stop();
  if (restart === 'before-demotion') {
    await waitFor('a Sentinel to start the failover', () => failoverStarted(fleet), 60_000);
    const flag = startAsPrimaryFile(fleet.dir, primaryName);
    writeFileSync(flag, '');
    await primary.start();
    rmSync(flag);
  }
  await waitFor('Sentinel to promote a replica', async () => (await sentinelPrimary(fleet)) !== before, 60_000);
  const promotionMs = Date.now() - faultAt;
  if (restart === 'after-promotion') await primary.start();
  // The split brain ends with the old primary's demotion (~10 s on): inside the scenario, measured.
  if (restart === 'before-demotion') {
    await waitFor('the old primary to be demoted and in sync', () => sentinelsReady(fleet), 60_000);
    return { faultAt, promotionMs, loadAverage };
  }
  // Whole enough for the settle period: every Sentinel names the new primary. Whether they all
  // know the old one as a replica in sync (their next INFO, up to 10 s) is what the next Redis
  // scenario waits for before its kill, so a run that ends here does not wait for it.
  const after = await sentinelPrimary(fleet);
  await waitFor(
    'every Sentinel to name the new primary',
    async () => {
      const named = await Promise.all(REDIS_HOSTS.map((h) => sentinelPrimary(fleet, h)));
      return named.every((p) => p === after);
    },
    60_000,
  );
  return { faultAt, promotionMs, loadAverage };
}

async function drainEnvoy(fleet: Fleet, name: string): Promise<void> {
  // Through the admin port on the host's own loopback: Envoy stops taking connections after its
  // 2 s drain time and tells keep-alive clients to reconnect (connection: close / GOAWAY).
  execFileSync(
    'ip',
    ['netns', 'exec', fleet.host(name).netns, 'curl', '-fsS', '-X', 'POST', `http://127.0.0.1:${adminPort}/drain_listeners?graceful`],
    { stdio: 'ignore' },
  );
  await sleep(3_000);
  await sup(fleet, name).restart();
  await sleep(BACK_IN_ROTATION_MS);
}

/** The scenarios, in the order they run (the Redis switch last: it moves the primary). */
export const SCENARIOS: readonly Scenario[] = [
  { name: 'embedder kill -9', run: plain((f) => killAndAwaitRestart(f, 'embedder-1')) },
  { name: 'embedder rolling restart', run: plain((f) => rolling(f, EMBEDDERS)) },
  { name: 'authz kill -9', run: plain((f) => killAndAwaitRestart(f, 'authz-1')) },
  { name: 'authz rolling restart', run: plain((f) => rolling(f, AUTHZ)) },
  { name: 'envoy drain + restart', run: plain((f) => drainEnvoy(f, 'gateway-1')) },
  { name: 'secret rotation', run: plain(rotateSecrets) },
  { name: 'redis primary killed', run: (f) => redisFailover(f, 'after-promotion'), redis: 'sentinel' },
  { name: 'redis primary restarted before demotion', run: (f) => redisFailover(f, 'before-demotion'), optional: true, redis: 'sentinel' },
  {
    // The primary of org-a's slot: org-a's requests fail closed until its replica is promoted
    // and has a replica again (the killed node, back); the other primaries' organizations are served.
    name: 'redis cluster primary killed',
    run: (f) => clusterFailover(f.cluster as NonNullable<Fleet['cluster']>, f.supervisors, LOAD_ORGS[0], LOAD_ORGS),
    redis: 'cluster',
  },
];

/** The scenarios a fleet whose Redis runs as `redis` can run (all but the other mode's). */
export function scenariosFor(redis: RedisMode): readonly Scenario[] {
  return SCENARIOS.filter((s) => s.redis === undefined || s.redis === redis);
}
