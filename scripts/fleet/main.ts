/**
 * `make fleet`: starts the fleet in network namespaces, puts a steady bounded load through both
 * gateways, runs every failure scenario under it (a Batch API batch running through each,
 * checked for every line once in its output and its usage: batch-scenario.ts), checks an organization's rate limit across
 * both gateways, prints a table and writes bench/results/fleet.json. Stops everything it
 * started and deletes its namespaces on every exit path (and those of a run that was killed).
 *
 *   node --import tsx scripts/fleet/main.ts [--quick] [--out FILE] [--model DIR] [--only SUBSTRING] [--starve] [--keep DIR]
 *                                           [--redis sentinel|cluster]
 *
 * `--redis cluster` runs the fleet's Redis as a Redis Cluster of three primaries with a replica
 * each (cluster.ts) instead of a primary, two replicas and Sentinels, and checks each load
 * organization's usage on its own primary.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { describeEvent } from '../stack/supervisor.js';
import { GATEWAYS, gatewayPort, startFleet, type Fleet, type RedisMode } from './fleet.js';
import { startLoad, GatewayClient, LOAD_ORGS, type GatewayTarget } from './load.js';
import { CLUSTER_HOSTS, clusterNodes, ownerOf, usageByOrg, type OrgUsage } from './cluster.js';
import { keySlot } from '../../contract/redis-target.js';
import { cleanStale } from './netns.js';
import { envoyAnswers, report, summarise, table, type ScenarioResult } from './report.js';
import { scenariosFor, type FaultFacts } from './scenarios.js';
import { cleanStaleGroups } from './starve.js';
import { FleetBatch, batchTable, type BatchCheck } from './batch-scenario.js';
import { sinceFirstStep } from './rotation-scenario.js';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench/results/fleet.json' },
    model: { type: 'string', default: '.local/models/test' },
    only: { type: 'string' },
    starve: { type: 'boolean', default: false },
    keep: { type: 'string' },
    redis: { type: 'string', default: 'sentinel' },
  },
});
if (values.redis !== 'sentinel' && values.redis !== 'cluster') throw new Error(`--redis is sentinel or cluster, not ${values.redis}`);
const redisMode = values.redis as RedisMode;
const quick = values.quick as boolean;
// --keep DIR: each scenario's outcomes (scenario-N.json) and every component's log (logs/) stay in DIR.
const keep = values.keep ? resolve(values.keep) : undefined;
// Bounded: a few requests a second keep 2 shared cores responsive while 16 processes run.
const LOAD = { ratePerS: quick ? 6 : 8, maxInFlight: 8, orgs: [...LOAD_ORGS] };
const WARMUP_MS = quick ? 1_500 : 3_000;
const SETTLE_MS = quick ? 2_500 : 5_000;
const RATE_LIMIT_RPM = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stderr.write(`fleet: ${line}\n`);

let stopper: { stop: () => Promise<void>; network: { destroy(): void } } | undefined;

async function admin(f: Fleet, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'admin/src/cli/main.ts', ...args], {
    env: { ...f.adminEnv },
    maxBuffer: 64 << 20,
  });
  return stdout;
}

async function createKeys(f: Fleet, orgs: readonly string[], rpm: number): Promise<Record<string, string>> {
  const keys: Record<string, string> = {};
  for (const org of orgs) {
    await admin(f, 'org', 'create', org, '--models', f.modelId, '--rpm', String(rpm), '--tpm', '100000000');
    keys[org] = JSON.parse(await admin(f, 'key', 'create', '--org', org, '--json')).key as string;
  }
  return keys;
}

/** A batch per scenario: lines × inputs, sized to outlast the fault on the fleet's model. */
const BATCH = { lines: quick ? 600 : 1_500, inputs: 8, waitMs: 300_000 };

/** The request ids of the usage records of `batch` (request_id `<batch>:<line>`). */
async function batchUsage(f: Fleet, batch: string): Promise<string[]> {
  const ids: string[] = [];
  for (const line of (await admin(f, 'usage', 'export', '--format', 'jsonl')).split('\n').filter(Boolean)) {
    const id = JSON.parse(line).request_id as string;
    if (id.startsWith(`${batch}:`)) ids.push(id);
  }
  return ids;
}

/** How often each request id is recorded in the fleet's usage stream. */
async function recordedUsage(f: Fleet): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await admin(f, 'usage', 'export', '--format', 'jsonl')).split('\n').filter(Boolean)) {
    const id = JSON.parse(line).request_id as string;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** 2N requests at once, alternating gateways, from one organization at rpm N: exactly N pass. */
async function rateLimit(
  f: Fleet,
  targets: GatewayTarget[],
): Promise<{ admitted: number; limit: number; requests: number; elapsedMs: number; statuses: Record<string, number> }> {
  const keys = await createKeys(f, ['org-rpm'], RATE_LIMIT_RPM);
  const client = new GatewayClient(targets, f.ca);
  const body = JSON.stringify({ model: f.modelId, input: 'Rate limit probe.' });
  const started = Date.now();
  const results = await Promise.all(
    Array.from({ length: RATE_LIMIT_RPM * 2 }, (_, i) => client.embed(`rpm-${i}`, keys['org-rpm'] as string, body)),
  );
  client.close();
  // What the others got: 429 for the ones over the limit; anything else says who failed.
  const statuses: Record<string, number> = {};
  for (const r of results) statuses[`${r.status} ${r.error ?? ''}`.trim()] = (statuses[`${r.status} ${r.error ?? ''}`.trim()] ?? 0) + 1;
  return {
    statuses,
    admitted: results.filter((r) => r.status === 200).length,
    limit: RATE_LIMIT_RPM,
    requests: results.length,
    elapsedMs: Date.now() - started,
  };
}

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) throw new Error('make fleet creates network namespaces: run it as root');
  const packages: Record<string, string> = {
    ip: 'iproute2',
    'redis-server': 'redis-server',
    'redis-sentinel': 'redis-sentinel',
    curl: 'curl',
  };
  const missing = Object.keys(packages).filter((tool) => {
    try {
      execFileSync('bash', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  // A fresh machine has none of the Sentinel: install what is missing, as .ci/run does.
  if (missing.length) {
    say(`installing ${missing.map((t) => packages[t]).join(' ')} (apt-get)`);
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', '-qq', ...missing.map((t) => packages[t] as string)], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  }
  if (keep) mkdirSync(keep, { recursive: true });
  const stale = cleanStale();
  // After the processes of killed runs are gone: their CPU groups are then empty.
  cleanStaleGroups();
  if (stale.length) say(`deleted the namespaces of earlier runs that are gone: ${stale.join(', ')}`);
  const envoyBinary = execFileSync('bash', ['scripts/install-envoy.sh'], { encoding: 'utf8' }).trim();
  say(
    `starting the fleet (${redisMode === 'cluster' ? '13 hosts in network namespaces, Redis Cluster' : '10 hosts in network namespaces'})`,
  );
  const f = await startFleet({
    modelDir: resolve(values.model as string),
    envoyBinary,
    starve: values.starve as boolean,
    redis: redisMode,
    ...(keep ? { keepLogsIn: keep } : {}),
    onEvent: (e) => say(describeEvent(e)),
    onStopper: (s) => {
      stopper = s;
    },
  });
  // On a cluster, each load organization's slot on its own primary (the exactness below reads it there).
  const keys = await createKeys(f, LOAD.orgs, 100_000);
  const placement: Record<string, string> = {};
  // A Check reads the key's record (the key id's slot) and then the organization's state (its slot).
  const keyPlacement: Record<string, string> = {};
  if (f.cluster) {
    const nodes = await clusterNodes(f.cluster, CLUSTER_HOSTS[0]);
    for (const org of LOAD.orgs) {
      placement[org] = ownerOf(nodes, keySlot(`{${org}}`))?.host ?? 'none';
      const keyId = (keys[org] as string).split('_')[1] as string;
      keyPlacement[org] = ownerOf(nodes, keySlot(`${f.redisKeyPrefix}key:${keyId}`))?.host ?? 'none';
    }
    say(`Redis Cluster: organizations on ${JSON.stringify(placement)}, their keys' records on ${JSON.stringify(keyPlacement)}`);
    if (new Set(Object.values(placement)).size !== LOAD.orgs.length)
      throw new Error('the load organizations do not sit on different primaries');
  }
  const targets = GATEWAYS.map((name) => ({ name, address: f.host(name).address, port: gatewayPort }));
  const raw: Array<{
    name: string;
    outcomes: Awaited<ReturnType<ReturnType<typeof startLoad>['stop']>>;
    ms: number;
    facts: FaultFacts | undefined;
  }> = [];
  const batchKey = (await createKeys(f, ['org-batch'], 100_000))['org-batch'] as string;
  const batchChecks: BatchCheck[] = [];
  const chosen = scenariosFor(redisMode).filter((s) => (values.only ? s.name.includes(values.only as string) : !s.optional));
  for (const [i, scenario] of chosen.entries()) {
    say(`scenario: ${scenario.name}`);
    const load = startLoad({
      gateways: targets,
      ca: f.ca,
      modelId: f.modelId,
      keys,
      ratePerS: LOAD.ratePerS,
      maxInFlight: LOAD.maxInFlight,
      idPrefix: `s${i}`,
      bogusEvery: 10,
    });
    const t0 = Date.now();
    const batch = new FleetBatch(targets, f.ca, batchKey);
    await batch.start(f.modelId, BATCH.lines, BATCH.inputs);
    await sleep(WARMUP_MS);
    const runningAtFault = (await batch.status()).status === 'in_progress';
    const facts = await scenario.run(f);
    await sleep(SETTLE_MS);
    raw.push({ name: scenario.name, outcomes: await load.stop(), ms: Date.now() - t0, facts });
    // Every request's outcome, for a look at a failure window after the run (--keep).
    if (keep)
      writeFileSync(join(keep, `scenario-${i}.json`), JSON.stringify({ name: scenario.name, facts, outcomes: raw.at(-1)?.outcomes }));
    batchChecks.push(await batch.check(scenario.name, BATCH.lines, runningAtFault, (id) => batchUsage(f, id), BATCH.waitMs));
  }
  say('rate limit across both gateways');
  const rate = await rateLimit(f, targets);
  // Envoy flushes its access log (today's usage path) within a second or two.
  await sleep(3_000);
  const recorded = await recordedUsage(f);
  const answers = envoyAnswers(
    GATEWAYS.map((name) => join(f.dir, 'logs', `${name}.log`))
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file, 'utf8')),
  );
  const scenarios: ScenarioResult[] = raw.map((r) => summarise(r.name, r.outcomes, recorded, r.ms, r.facts, answers));
  // Every 200 against the records in its organization's stream, read on the primary holding its slot.
  const orgUsage: OrgUsage[] = f.cluster
    ? await usageByOrg(
        f.cluster,
        f.redisKeyPrefix,
        LOAD.orgs,
        raw.flatMap((r) => r.outcomes),
      )
    : [];
  const result = {
    ...report(scenarios, rate, {
      quick,
      starve: values.starve as boolean,
      load: { rate_per_s: LOAD.ratePerS, max_in_flight: LOAD.maxInFlight, organizations: LOAD.orgs.length },
    }),
    batch: { lines: BATCH.lines, inputs_per_line: BATCH.inputs, checks: batchChecks },
    redis: redisMode,
    ...(f.cluster ? { cluster: { placement_at_start: placement, key_placement_at_start: keyPlacement, orgs: orgUsage } } : {}),
  };
  const out = resolve(values.out as string);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${table(result)}\n\n${batchTable(batchChecks)}\n\nwrote ${out}\n`);
  for (const s of scenarios.filter((x) => x.fail_closed_ms_by_org))
    process.stdout.write(
      `${s.name}: ${s.killed} killed, ${s.promoted} promoted; its organizations ${JSON.stringify(s.fault_orgs)}; ` +
        `failed after the kill ${JSON.stringify(s.failed_by_org_after_fault)}, fail-closed ms ${JSON.stringify(s.fail_closed_ms_by_org)}\n`,
    );
  for (const u of orgUsage)
    process.stdout.write(
      `cluster usage ${u.org} (slot ${u.slot}, on ${u.primary}): ${u.returned} 200s / ${u.returned_tokens} tokens; ` +
        `${u.records} records / ${u.recorded_tokens} tokens; missing ${u.missing}, duplicates ${u.duplicates}, extra ${u.extra} (${u.in_flight} of requests that failed in flight): ${u.exact ? 'exact' : 'NOT EXACT'}` +
        `${u.exact ? '' : ` ${JSON.stringify({ missing: u.missing_ids, duplicates: u.duplicate_ids, extra: u.extra_records })}`}\n`,
    );
  // A rotation done by the book fails no request from its first step on and loses no usage (deploy/README.md).
  let rotated = true;
  for (const r of raw.filter((s) => s.name === 'secret rotation')) {
    const { answered, failed, refusedGrants, failures } = sinceFirstStep(r.outcomes);
    const s = scenarios.find((x) => x.name === r.name) as ScenarioResult;
    // A 503 is also what a Check that timed out on a starved machine gives; the rotation's own
    // failures (a refused grant here, a refused Check in rotateSecrets) must be none.
    rotated = refusedGrants === 0 && answered > 0 && s.usage_recorded === s.usage_returned;
    process.stdout.write(
      `secret rotation: ${answered} requests answered from the first step on, ${failed} not a 200 ${JSON.stringify(failures)}, ${refusedGrants} refused for their grant; usage ${s.usage_recorded} recorded of ${s.usage_returned} returned\n`,
    );
  }
  return batchChecks.every((c) => c.ok) && rotated && orgUsage.every((u) => u.exact) ? 0 : 1;
}

let stopping: Promise<void> | undefined;
let interrupted = false;
/** Stops the fleet once, whoever asks first (a signal, the end of main, an error). */
function shutdown(): Promise<void> {
  stopping ??= stopper?.stop() ?? Promise.resolve();
  return stopping;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping the fleet`);
    interrupted = true;
    void shutdown().finally(() => process.exit(130));
  });
}
// Last resort (an uncaught error mid-way): no namespace outlives the run.
process.once('exit', () => stopper?.network.destroy());

main()
  .then(async (code) => {
    await shutdown();
    process.exit(interrupted ? 130 : code);
  })
  .catch(async (err: Error) => {
    if (!interrupted) say(`failed: ${err.stack ?? err.message}`);
    await shutdown();
    process.exit(interrupted ? 130 : 1);
  });
