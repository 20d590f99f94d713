/**
 * `make fleet`, shortened (--quick): the whole fleet in network namespaces under load, every
 * scenario, the rate limit across both gateways, and fleet.json. Also its clean-up: a run
 * interrupted with SIGINT deletes its namespaces; one killed with SIGKILL leaves them, and the
 * next run deletes them (and kills what still ran in them) before it starts.
 * Needs root (ip netns), redis-sentinel and Envoy; takes about 3 minutes on 2 shared cores.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetReport } from '../../scripts/fleet/report.js';
import { scenariosFor } from '../../scripts/fleet/scenarios.js';
import { repoRoot } from '../../scripts/stack/components.js';
import { waitFor } from '../support/process.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-fleet-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fleetNamespaces = () =>
  execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith('ctgf'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * A shortened run: the script itself (so a signal reaches it, not make), or `make fleet` as a user
 * types it (FLEET_ARGS passes the options through; make's `install` prerequisite runs first).
 */
function startRun(
  name: string,
  out = join(dir, `${name}.json`),
  how: 'script' | 'make' = 'script',
): { child: ChildProcess; log: () => string } {
  let log = '';
  const child =
    how === 'make'
      ? spawn('make', ['fleet', `FLEET_ARGS=--quick --out ${out}`], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, ['--import', 'tsx', 'scripts/fleet/main.ts', '--quick', '--out', out], {
          cwd: repoRoot,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  child.stdout?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  return { child, log: () => log };
}

/** The namespaces a run created (those that were not there before it). */
async function namespacesOf(run: { log: () => string }, before: readonly string[]): Promise<string[]> {
  await waitFor('the run to start Redis in its namespaces', async () => run.log().includes('redis-a is ready'), 120_000);
  return fleetNamespaces().filter((n) => !before.includes(n));
}

describe('make fleet', () => {
  let killedRun: { namespaces: string[]; pids: number[] } = { namespaces: [], pids: [] };

  it('SIGINT stops everything and deletes the namespaces', async () => {
    const before = fleetNamespaces();
    const run = startRun('interrupted');
    const mine = await namespacesOf(run, before);
    expect(mine.length).toBe(10);
    run.child.kill('SIGINT');
    const [code] = await once(run.child, 'exit');
    expect(code).toBe(130);
    expect(fleetNamespaces().filter((n) => mine.includes(n))).toEqual([]);
  }, 150_000);

  it('a run killed with SIGKILL leaves namespaces behind (cleaned by the next run, below)', async () => {
    const before = fleetNamespaces();
    const run = startRun('killed');
    const namespaces = await namespacesOf(run, before);
    const pids = namespaces.flatMap((ns) =>
      execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number),
    );
    run.child.kill('SIGKILL');
    await once(run.child, 'exit');
    expect(pids.length).toBeGreaterThan(0);
    expect(fleetNamespaces().filter((n) => namespaces.includes(n))).toEqual(namespaces);
    killedRun = { namespaces, pids };
  }, 150_000);

  it('make fleet runs every scenario under load and meets the targets; cleans up the killed run first and itself after', async () => {
    const out = join(dir, 'fleet.json');
    const before = fleetNamespaces();
    const run = startRun('full', out, 'make');
    const [code] = await once(run.child, 'exit');
    expect(code, run.log()).toBe(0);
    // The killed run's namespaces and processes are gone, and so are this run's.
    expect(run.log()).toContain('deleted the namespaces of earlier runs that are gone');
    for (const pid of killedRun.pids) expect(alive(pid), `pid ${pid} of the killed run`).toBe(false);
    expect(fleetNamespaces().filter((n) => !before.includes(n) || killedRun.namespaces.includes(n))).toEqual([]);

    const r = JSON.parse(readFileSync(out, 'utf8')) as FleetReport;
    expect(run.log()).toContain('failed_total');
    expect(r.scenarios.map((s) => s.name)).toEqual(
      scenariosFor('sentinel')
        .filter((s) => !s.optional)
        .map((s) => s.name),
    );
    const byName = Object.fromEntries(r.scenarios.map((s) => [s.name, s]));
    for (const s of r.scenarios) {
      expect(s.requests, s.name).toBeGreaterThan(10);
      expect(s.ok + s.failed, s.name).toBe(s.requests);
      // Never an open door, and every failure is the fail-closed 503 with retry-after.
      expect(s.open_door, s.name).toBe(0);
      expect(s.failed_not_503_retry_after, s.name).toBe(0);
      expect(s.usage_recorded, s.name).toBeLessThanOrEqual(s.usage_returned);
    }
    // Targets: no client-visible failure when an embedder dies or anything restarts in turn
    // (requests are retried on another replica, or go to a healthy one) ...
    // An authz killed mid-Check: Envoy asks another replica (ext_authz retry_policy).
    for (const name of [
      'embedder kill -9',
      'embedder rolling restart',
      'authz kill -9',
      'authz rolling restart',
      'envoy drain + restart',
    ]) {
      expect(byName[name]?.failed, `${name}: ${JSON.stringify(byName[name]?.failed_statuses)}`).toBe(0);
    }
    // ... and no usage lost, the Redis switch included: the embedder records each 200's usage
    // before it answers, and once a replica holds it (WAIT, SETTLEMENT_MIN_REPLICAS=1 in the
    // fleet): a record the dying primary had not replicated was never acknowledged.
    for (const s of r.scenarios) expect(s.usage_recorded, s.name).toBe(s.usage_returned);
    expect(r.usage_lost).toBe(0);
    // The Redis switch (Redis and Sentinel with passwords): a replica is promoted in every run
    // and the gateway recovers by itself. The bounds are what the Sentinel settings allow
    // (fleet.ts SENTINEL_SETTINGS; scripts/fleet/README.md, "the fail-closed window"), not a
    // wish: the primary is held down 1 s after its last PONG (up to 2 s after the kill),
    // objectively down at the next ask of the other Sentinels (1 s), and the promotion and the
    // other replica's reconfiguration are each seen at the next INFO (1 s each): 5 s; 3 s more
    // for a loaded machine, where the Sentinels' 100 ms timers and the INFO replies run late
    // (measured: up to 4.7 s at load average 21 on 2 cores). Once the Sentinels name the new
    // primary, each client reconnects within 250 ms (contract/redis-target.ts), but a reconnect
    // is about six round trips (Sentinel login and query, primary login, role check) through an
    // event loop that a loaded machine runs late, and authz's Redis commands time out after 500 ms
    // meanwhile: 6 s after the promotion (measured: 2.4 s at load 19, up to 5.1 s at load 27
    // on 2 cores, BENCHMARKS.md). A false second failover (load 32: no PONG from the promoted
    // replica within 1 s) exceeds it, and should fail here.
    const redis = byName['redis primary killed'];
    expect(redis?.ok).toBeGreaterThan(0);
    expect(redis?.promotion_ms).toBeGreaterThan(0);
    expect(redis?.promotion_ms).toBeLessThan(8_000);
    expect(redis?.fail_closed_ms).toBeLessThanOrEqual((redis?.promotion_ms ?? 0) + 6_000);
    // Exactly N of 2N: the bucket refills one request every 60/N s, so a burst slower than that
    // (a very loaded machine) may rightly admit one more per interval, never more.
    const refilled = Math.floor((r.rate_limit_elapsed_ms * r.rate_limit_limit) / 60_000);
    expect(r.rate_limit_admitted).toBeGreaterThanOrEqual(r.rate_limit_limit);
    expect(r.rate_limit_admitted).toBeLessThanOrEqual(r.rate_limit_limit + refilled);
    expect(r.rate_limit_requests).toBe(2 * r.rate_limit_limit);
    expect(r.failed_total).toBe(r.scenarios.reduce((n, s) => n + s.failed, 0));
    expect(r.usage_lost).toBe(r.scenarios.reduce((n, s) => n + s.usage_returned - s.usage_recorded, 0));
  }, 400_000);
});
