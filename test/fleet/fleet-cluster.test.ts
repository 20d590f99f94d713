/**
 * `make fleet` on a real Redis Cluster (`--redis cluster`, issue 28), shortened: three primaries
 * with a replica each in the fleet's namespaces, authz, the embedders (their own Redis user,
 * SETTLEMENT_MIN_REPLICAS=1) and admin given REDIS_CLUSTER_NODES, the load's organizations on
 * three different primaries. One scenario under load: the primary of org-a's slot killed, the
 * cluster promotes its replica, the killed node comes back as its replica. Then:
 * - every organization's 200s are exactly its usage records, read on its own primary (each
 *   recorded once, with the tokens returned; no record of a request that got no 200);
 * - no usage lost, never a 200 for a bogus key, every failure the fail-closed 503 with retry-after;
 * - a replica promoted, the killed node back, the batch through the fault exact;
 * - the rate limit exact across both gateways (N of 2N).
 * Needs root (ip netns), redis-server and Envoy; about 40 s on 2 shared cores.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { FleetReport } from '../../scripts/fleet/report.js';
import { repoRoot } from '../../scripts/stack/components.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-fleet-cluster-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('the fleet on a Redis Cluster: a primary killed under load, usage exact per organization on its primary', async () => {
  const out = join(dir, 'fleet-cluster.json');
  let log = '';
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/fleet/main.ts', '--quick', '--redis', 'cluster', '--only', 'redis cluster', '--out', out],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const [code] = await once(child, 'exit');
  expect(code, log).toBe(0);

  const r = JSON.parse(readFileSync(out, 'utf8')) as FleetReport;
  expect(r.redis).toBe('cluster');
  // The load's three organizations on three different primaries.
  const placement = r.cluster?.placement_at_start ?? {};
  expect(Object.keys(placement).sort()).toEqual(['org-a', 'org-b', 'org-c']);
  expect(new Set(Object.values(placement)).size).toBe(3);

  expect(r.scenarios.map((s) => s.name)).toEqual(['redis cluster primary killed']);
  const s = r.scenarios[0]!;
  expect(s.ok, log).toBeGreaterThan(10);
  expect(s.open_door).toBe(0);
  expect(s.failed_not_503_retry_after, JSON.stringify(s.failed_statuses)).toBe(0);
  expect(s.usage_recorded).toBe(s.usage_returned);
  expect(r.usage_lost).toBe(0);
  // The cluster promoted the killed primary's replica; org-a was on it.
  expect(s.killed).toBe(placement['org-a']);
  expect(s.promoted).toBeTruthy();
  expect(s.promoted).not.toBe(s.killed);
  expect(s.fault_orgs).toContain('org-a');
  expect(s.promotion_ms).toBeGreaterThan(0);

  // Exact per organization, read on the primary that holds its slot (the promoted one for org-a).
  const orgs = r.cluster?.orgs ?? [];
  expect(orgs.map((u) => u.org).sort()).toEqual(['org-a', 'org-b', 'org-c']);
  for (const u of orgs) {
    expect(u.returned, u.org).toBeGreaterThan(0);
    expect(u, u.org).toMatchObject({ missing: 0, duplicates: 0, extra: 0, exact: true });
    expect(u.records, u.org).toBe(u.returned);
    expect(u.recorded_tokens, u.org).toBe(u.returned_tokens);
  }
  expect(orgs.find((u) => u.org === 'org-a')?.primary).toBe(s.promoted);

  // The batch running through the fault: every line once in its output and its usage.
  expect(
    (r as unknown as { batch: { checks: Array<{ ok: boolean }> } }).batch.checks.every((c) => c.ok),
    log,
  ).toBe(true);
  // Exactly N of 2N across both gateways (a slow burst may rightly admit one more per refill).
  const refilled = Math.floor((r.rate_limit_elapsed_ms * r.rate_limit_limit) / 60_000);
  expect(r.rate_limit_admitted).toBeGreaterThanOrEqual(r.rate_limit_limit);
  expect(r.rate_limit_admitted).toBeLessThanOrEqual(r.rate_limit_limit + refilled);
}, 300_000);
