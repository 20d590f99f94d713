/**
 * Legitimate traffic during a junk-key flood, through the whole gateway (Envoy over TLS, authz,
 * the embedder on the generated test model, Redis at REDIS_URL), as the issue's goal states it:
 * during 2,000 req/s of well-formed unknown keys (a fresh random id each), at least 99 % of
 * legitimate requests served, with p99 under 1 s.
 *
 *   npx tsx bench/flood-keys.ts [--rate 2000] [--seconds 20] [--legit-rate 50] [--burst 200] [--per-source-rps 100]
 *     [--authz-millicores 150] [--new-key-rps 25] [--flood-sources 1]
 *
 * `--authz-millicores N` holds authz to N/1000 of a CPU with a cgroup quota after the warm-up,
 * as a Kubernetes limit does (test/pressure/cpu-quota.ts; needs root). Envoy's authz deadline and
 * bound are the shipped ones (envoy/render.ts AUTHZ_DEFAULTS), not the test stacks' 0.5 s.
 *
 * Three runs, each on a fresh stack: Envoy's new-key budget (ENVOY_NEW_KEY_RPS, envoy/new-keys.ts)
 * at `--new-key-rps` (the shipped default unless given), then that with Envoy's per-source limit
 * (ENVOY_PER_SOURCE_RPS) at `--per-source-rps`, then without the budget (authz's key cache alone
 * keeps known keys first: the gateway before the budget, for the same run's comparison). At
 * `--authz-millicores 150` keep `--legit-rate` and `--burst` within what authz at that quota
 * decides without any flood (about 20/s and 50: BENCHMARKS.md), or the figure measures authz's
 * capacity, not the flood. The flood comes from 127.0.0.2 in a process of its own
 * (bench/open-loop.ts), the legitimate client from 127.0.0.1: to Envoy, two sources;
 * `--flood-sources N` spreads the flood's connections over 127.0.0.2 … 127.0.0.(N+1), a flood
 * from many clients, which no per-address share holds back. The
 * legitimate client sends `--legit-rate` small embedding requests per second, open loop, plus
 * `--burst` at once halfway (the issue saw 200 simultaneous legitimate requests all refused).
 * Every legitimate request counts: a failure or a timeout (10 s) is not served, and its time
 * counts in the p99 too.
 *
 * Writes bench/results/flood-keys.json and merges into bench/results/latest.json (other fields
 * kept) `flood_legit_success` and `flood_legit_p99_ms` (the budget), `flood_legit_success_per_source`
 * and `flood_legit_p99_ms_per_source`, and `flood_legit_success_no_new_key_budget` and
 * `flood_legit_p99_ms_no_new_key_budget`.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { orgWithKey } from '../test/support/stack-admin.js';
import { repoRoot, startStack, type EnvoyOverrides, type Stack } from '../test/support/stack.js';
import { quantile } from './hey.ts';
import { openLoop, openSessions, send } from './open-loop.ts';
import { cpuMs } from './processes.ts';
import { AUTHZ_DEFAULTS } from '../envoy/render.ts';
import { NEW_KEY_RPS_DEFAULT } from '../envoy/new-keys.ts';
import { limitCpu, type CpuQuota } from '../test/pressure/cpu-quota.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '20' },
    'legit-rate': { type: 'string', default: '50' },
    burst: { type: 'string', default: '200' },
    'per-source-rps': { type: 'string', default: '100' },
    'authz-millicores': { type: 'string', default: '0' },
    'new-key-rps': { type: 'string', default: String(NEW_KEY_RPS_DEFAULT) },
    'flood-sources': { type: 'string', default: '1' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const legitRate = Number(values['legit-rate']);
const burst = Number(values.burst);
const perSourceRps = Number(values['per-source-rps']);
const authzMillicores = Number(values['authz-millicores']);
const newKeyRps = Number(values['new-key-rps']);
const run = promisify(execFile);
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const floodSources = Number(values['flood-sources']);
if (!Number.isInteger(floodSources) || floodSources < 1 || floodSources > 250) throw new Error('--flood-sources: 1 to 250');
const FLOOD_SOURCES = Array.from({ length: floodSources }, (_, i) => `127.0.0.${i + 2}`);

/** authz's key-lookup counters (hit, miss, merged, shed), read with the stack's metrics token. */
async function keyLookups(stack: Stack): Promise<Record<string, number>> {
  const token = readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim();
  const text = await (
    await fetch(`http://127.0.0.1:${stack.ports.authzMetrics}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  return Object.fromEntries(
    [...text.matchAll(/^authz_key_cache_lookups_total\{result="(\w+)"\} (\d+)/gm)].map((m) => [m[1], Number(m[2])]),
  );
}

/** Envoy's ext_authz, authz-cluster and per-source counters that explain a refusal (non-zero only). */
async function envoyCounters(adminPort: number): Promise<Record<string, number>> {
  const filter = encodeURIComponent(
    'http\\.gateway\\.ext_authz|cluster\\.authz\\.upstream_rq_(timeout|503|504|pending_overflow)|per_source|new_keys',
  );
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/stats?filter=${filter}`)).text();
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => /: \d+$/.test(l))
      .map((l) => l.split(': '))
      .filter(([, v]) => Number(v) > 0)
      .map(([k, v]) => [k!, Number(v)]),
  );
}

/** One flood against a fresh stack with `envoy` settings; the figures of the legitimate client. */
async function scenario(name: string, envoy: EnvoyOverrides) {
  const stack = await startStack(join(repoRoot, '.local/models/test'), {
    authzTimeoutMs: AUTHZ_DEFAULTS.timeoutMs,
    authzMaxChecks: AUTHZ_DEFAULTS.maxChecks,
    newKeyRps,
    ...envoy,
  });
  let quota: CpuQuota | undefined;
  try {
    const key = orgWithKey(stack, 'legit', { rpm: 100_000_000, tpm: 1_000_000_000 }).key;
    const body = JSON.stringify({ model: stack.svc.modelId, input: 'Patient reports mild headache since Tuesday.' });
    const headers = () => ({ authorization: `Bearer ${key}` });
    // Warm-up: JIT, connections, the key in authz's cache.
    await openLoop({ port: stack.ports.gateway, ca: stack.ca, rate: legitRate, seconds: 2, sessions: 2, body, headers });
    if (authzMillicores > 0) quota = limitCpu(stack.processes.authz.pid!, authzMillicores);
    const lookupsBefore = await keyLookups(stack);
    const pids = { authz: stack.processes.authz.pid!, envoy: stack.processes.envoy.pid!, embedder: stack.processes.embedder.pid! };
    const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
    const floodStarted = performance.now();
    const flood = run(
      process.execPath,
      [
        '--import',
        'tsx',
        'bench/open-loop.ts',
        String(stack.ports.gateway),
        stack.dirs.caFile,
        String(rate),
        String(seconds),
        String(Math.max(32, floodSources)),
        FLOOD_SOURCES.join(','),
      ],
      { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024, timeout: (seconds + 120) * 1000 },
    );
    await new Promise((r) => setTimeout(r, 1_000)); // the flood under way first
    const burstSessions = await openSessions(stack.ports.gateway, stack.ca, 2);
    const burstResults = new Promise<Array<{ status: number; ms: number }>>((done) =>
      setTimeout(
        () => {
          done(Promise.all(Array.from({ length: burst }, (_, i) => send(burstSessions[i % 2]!, body, headers(), 10_000))));
        },
        (seconds / 2 - 1) * 1000,
      ),
    );
    const steady = await openLoop({
      port: stack.ports.gateway,
      ca: stack.ca,
      rate: legitRate,
      seconds: seconds - 2,
      sessions: 4,
      body,
      headers,
    });
    const legit = [...steady.latencies, ...(await burstResults)];
    for (const s of burstSessions) s.close();
    const junk = JSON.parse((await flood).stdout.trim().split('\n').pop()!) as {
      sent: number;
      statuses: Record<string, number>;
      seconds: number;
    };
    const lookupsAfter = await keyLookups(stack);
    const floodS = (performance.now() - floodStarted) / 1000;
    // Share of one core each process used during the flood: what the junk costs, and where.
    const cores = Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [name, round((cpuMs(pid) - cpuBefore[name]!) / 1000 / floodS, 2)]),
    );
    const served = legit.filter((r) => r.status === 200).length;
    const times = legit.map((r) => r.ms).sort((a, b) => a - b);
    const statuses: Record<string, number> = {};
    for (const r of legit) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    return {
      name,
      envoy,
      loadAverage1m: round(loadavg()[0]!, 2),
      junk: { offeredPerS: rate, sentPerS: round(junk.sent / junk.seconds), statuses: junk.statuses },
      legit: {
        requests: legit.length,
        served,
        statuses,
        success: round(served / legit.length, 4),
        p50Ms: round(quantile(times, 0.5)),
        p99Ms: round(quantile(times, 0.99)),
        maxMs: round(times.at(-1) ?? Number.NaN),
      },
      authzKeyLookups: Object.fromEntries(Object.entries(lookupsAfter).map(([k, v]) => [k, v - (lookupsBefore[k] ?? 0)])),
      coresUsed: cores,
      envoyCounters: await envoyCounters(stack.ports.admin),
      authzMillicores: authzMillicores || null,
      authzThrottledPeriods: quota?.throttledPeriods() ?? null,
    };
  } finally {
    quota?.release();
    await stack.stop();
  }
}

const shipped = await scenario(`new-key budget ${newKeyRps}/s (shipped: ${NEW_KEY_RPS_DEFAULT}/s)`, {});
const perSource = await scenario(`per-source limit ${perSourceRps}/s`, { perSourceRps });
// The gateway before the new-key budget, for the same run's comparison.
const noBudget = await scenario('without the new-key budget', { newKeyRps: 0 });
const result = {
  date: new Date().toISOString(),
  command: `npx tsx bench/flood-keys.ts --rate ${rate} --seconds ${seconds} --legit-rate ${legitRate} --burst ${burst} --per-source-rps ${perSourceRps} --authz-millicores ${authzMillicores} --new-key-rps ${newKeyRps} --flood-sources ${floodSources}`,
  scenarios: [shipped, perSource, noBudget],
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(repoRoot, 'bench/results'), { recursive: true });
writeFileSync(join(repoRoot, 'bench/results/flood-keys.json'), `${JSON.stringify(result, null, 2)}\n`);
// Merged, never overwritten: the other parts of `make bench` write their fields here too.
const latest = join(repoRoot, 'bench/results/latest.json');
const merged = existsSync(latest) ? (JSON.parse(readFileSync(latest, 'utf8')) as Record<string, unknown>) : {};
Object.assign(merged, {
  flood_legit_success: shipped.legit.success,
  flood_legit_p99_ms: shipped.legit.p99Ms,
  flood_legit_success_per_source: perSource.legit.success,
  flood_legit_p99_ms_per_source: perSource.legit.p99Ms,
  flood_legit_success_no_new_key_budget: noBudget.legit.success,
  flood_legit_p99_ms_no_new_key_budget: noBudget.legit.p99Ms,
});
writeFileSync(latest, `${JSON.stringify(merged, null, 2)}\n`);
