/**
 * The failure scenarios `make fleet` measures under load, each an action on the running fleet
 * that returns once the fleet is whole again: embedder kill -9 and rolling restart, authz kill -9
 * and rolling restart, one Envoy drained and restarted, and the Redis primary killed (Sentinel
 * promotes the replica; the old primary returns as a replica).
 */
import { execFileSync } from 'node:child_process';
import type { Supervisor } from '../stack/supervisor.js';
import { waitFor } from '../stack/probes.js';
import { AUTHZ, EMBEDDERS, SENTINEL_NAME, adminPort, sentinelPort, type Fleet } from './fleet.js';
import { rotateSecrets } from './rotation-scenario.js';

export interface Scenario {
  readonly name: string;
  readonly run: (fleet: Fleet) => Promise<void>;
}

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

/** The primary Sentinel names now ("host:port"). */
export function sentinelPrimary(fleet: Fleet): string {
  const sentinel = fleet.host('sentinel-c');
  // The password through the environment (REDISCLI_AUTH), not the command line.
  const out = execFileSync(
    'redis-cli',
    ['-h', sentinel.address, '-p', String(sentinelPort), 'SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME],
    { encoding: 'utf8', env: { ...process.env, REDISCLI_AUTH: fleet.sentinelPassword } },
  );
  return out.trim().split('\n').join(':');
}

async function redisFailover(fleet: Fleet): Promise<void> {
  const before = sentinelPrimary(fleet);
  const primaryName = before.startsWith(fleet.host('redis-a').address) ? 'redis-a' : 'redis-b';
  // The primary's host is lost: SIGKILL and no restart until Sentinel has promoted the replica.
  const primary = sup(fleet, primaryName);
  primary.signal('SIGKILL');
  await primary.stop();
  await waitFor('Sentinel to promote the replica', async () => sentinelPrimary(fleet) !== before, 60_000);
  // The old primary comes back; Sentinel turns it into a replica of the new one.
  await primary.start();
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
  { name: 'embedder kill -9', run: (f) => killAndAwaitRestart(f, 'embedder-1') },
  { name: 'embedder rolling restart', run: (f) => rolling(f, EMBEDDERS) },
  { name: 'authz kill -9', run: (f) => killAndAwaitRestart(f, 'authz-1') },
  { name: 'authz rolling restart', run: (f) => rolling(f, AUTHZ) },
  { name: 'envoy drain + restart', run: (f) => drainEnvoy(f, 'gateway-1') },
  { name: 'secret rotation', run: rotateSecrets },
  { name: 'redis primary killed', run: redisFailover },
];
