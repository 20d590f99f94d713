/**
 * Fairness between organizations, at full size: organization "big" sends one request of
 * --inputs × 512 tokens (1,000 by default: the request that used to hold the model for two
 * minutes) through the real Envoy + authz + embedder with the default model, while organization
 * "small" sends one-line requests back to back until it finishes. Prints the large request's
 * duration and the small requests' latencies (worst case first) and writes
 * bench/results/fairness.json.
 *   npx tsx bench/fairness.ts [--inputs 1000] [--baseline] [--authz-millicores 150]
 * --baseline: the small requests come from the large request's own organization, whose share is
 * raised to the whole queue: one FIFO queue, as every request shared before fair scheduling
 * (results in bench/results/fairness-baseline.json).
 * --authz-millicores N: authz held to N/1000 of a CPU by a cgroup quota after the warm-up, as a
 * Kubernetes limit holds it (test/pressure/cpu-quota.ts; needs root).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { bigAgainstSmall, percentile, postEmbeddings } from '../test/support/fairness-load.ts';
import { orgWithKey } from '../test/support/stack-admin.ts';
import { limitCpu, type CpuQuota } from '../test/pressure/cpu-quota.ts';
import { startStack } from '../test/support/stack.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    inputs: { type: 'string', default: '1000' },
    baseline: { type: 'boolean', default: false },
    'authz-millicores': { type: 'string', default: '0' },
  },
});
const authzMillicores = Number(values['authz-millicores']);
const baseline = values.baseline as boolean;
const inputs = Number(values.inputs);
if (!Number.isInteger(inputs) || inputs < 1 || inputs > 1000) throw new Error('--inputs must be an integer from 1 to 1000');
const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
const round = (ms: number): number => Math.round(ms);

log('starting the stack (default model)');
const stack = await startStack();
let quota: CpuQuota | undefined;
try {
  if (baseline) await stack.startService('embedder', { QUEUE_TENANT_MAX_INPUTS: '4000', QUEUE_TENANT_MAX_TOKENS: '2097152' });
  const limits = { rpm: 100_000, tpm: 100_000_000 };
  const big = orgWithKey(stack, 'bench-big', limits);
  const small = baseline ? big : orgWithKey(stack, 'bench-small', limits);
  for (const key of [big, small]) {
    const warm = await postEmbeddings(stack, key.key, 'warm up');
    if (warm.status !== 200) throw new Error(`warm-up answered ${warm.status}: ${warm.body}`);
  }
  if (authzMillicores > 0) quota = limitCpu(stack.processes.authz.pid!, authzMillicores);
  const loadBefore = loadavg()[0]!;
  log(`large request: ${inputs} × 512 tokens; load average ${loadBefore.toFixed(1)}`);
  const run = await bigAgainstSmall(stack, big.key, small.key, inputs);
  const ms = run.small.map((s) => s.ms);
  const queue = run.small.map((s) => s.queueMs ?? Number.NaN);
  const result = {
    when: new Date().toISOString(),
    mode: baseline ? 'baseline: one organization, one FIFO queue' : 'fair: two organizations',
    authzMillicores: authzMillicores || null,
    loadAverage1m: { before: loadBefore, after: loadavg()[0]! },
    big: { ...run.big, ms: round(run.big.ms), tokensPerSecond: round(run.big.tokens / (run.big.ms / 1000)) },
    small: {
      requests: run.small.length,
      non200: run.small.filter((s) => s.status !== 200).length,
      latencyMs: {
        worst: round(Math.max(...ms)),
        p99: round(percentile(ms, 99)),
        p90: round(percentile(ms, 90)),
        p50: round(percentile(ms, 50)),
        best: round(Math.min(...ms)),
      },
      queueTimeMs: { worst: Math.max(...queue), p50: percentile(queue, 50) },
    },
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/fairness${baseline ? '-baseline' : ''}.json`, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
} finally {
  quota?.release();
  await stack.stop();
}
