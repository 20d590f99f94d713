/**
 * The run's results: `bench/results/latest.json` (the issue's fields at the top level, the
 * detail below them) and the printed table.
 */
import type { BatchBenchResult } from './batch.ts';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import type { AuthzResult } from './authz.ts';
import type { ModelEfficiency } from './efficiency.ts';
import type { CpuAtRate, GatewayResult, PathCost } from './gateway.ts';
import type { WaitResult } from './wait.ts';
import { perCoreRate } from './wait-summary.ts';

/** An older tree's gateway measured in the same run (bench/baseline.ts). */
export interface BaselineResult {
  tree: string;
  loadAtStart: number;
  maxRps: number;
  cpu: CpuAtRate;
  steps: GatewayResult['steps'];
}

/** Everything one run measured; parts not run are absent. */
export interface RunResults {
  /** 1-minute load average when the run started: other work on the 2 cores skews every figure. */
  loadAtStart?: number;
  efficiency?: ModelEfficiency[];
  gateway?: GatewayResult;
  authz?: AuthzResult;
  gatewayModel?: string;
  /** The default model's id: its worst case is the goal's embedder_vs_raw_ort. */
  defaultModel?: string;
  /** 1-minute load average when the gateway part started. */
  loadAtGateway?: number;
  baseline?: BaselineResult;
  pathCost?: PathCost;
  /** The Batch API's goals (bench/batch.ts). */
  batch?: BatchBenchResult;
  /** Part `wait` (bench/wait.ts): the path with a replica and WAIT against a standalone Redis. */
  wait?: WaitResult;
  /** 1-minute load average when the wait part started. */
  loadAtWait?: number;
}

/** The issue's goals, checked against the headline numbers. */
export const GOALS = {
  gateway_max_rps_p99_50ms: { min: 1000 },
  gateway_max_rps_vs_baseline: { min: 2 },
  gateway_cpu_ms_per_req_500: { max: 2 },
  embedder_vs_raw_ort: { min: 0.9 },
  embedder_vs_transformersjs: { min: 1.5 },
  gateway_added_p50_ms: { max: 1 },
  gateway_added_p99_ms: { max: 5 },
  authz_checks_per_s: { min: 5000 },
  batch_vs_raw_ort: { min: 0.9 },
  batch_online_p99_ratio: { max: 1.25 },
} as const;

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** The headline fields of the parts that ran. */
export function headline(r: RunResults): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  if (r.efficiency?.length) {
    // The goal is the default model's worst case; the other models' (the generated test model,
    // where HTTP dominates a tiny inference) are reported beside it, not folded into it.
    const main = r.efficiency.find((m) => m.model === r.defaultModel) ?? r.efficiency[0]!;
    const others = r.efficiency.filter((m) => m !== main);
    out.embedder_vs_raw_ort = round(main.minVsRawOrt, 3);
    out.embedder_vs_raw_ort_model = main.model;
    for (const h of main.http) out[`embedder_vs_raw_ort_${h.case.replace(/[×\s]+/g, '_')}`] = round(h.vsRawOrt, 3);
    if (others.length) out.embedder_vs_raw_ort_test_model = round(Math.min(...others.map((m) => m.minVsRawOrt)), 3);
    out.embedder_vs_transformersjs = round(Math.min(...r.efficiency.map((m) => m.minVsTransformersjs)), 3);
    // By CPU time per input (steadier than inputs/s when other work shares the cores).
    out.embedder_vs_raw_ort_cpu = round(main.minCpuVsRawOrt, 3);
    if (others.length) out.embedder_vs_raw_ort_cpu_test_model = round(Math.min(...others.map((m) => m.minCpuVsRawOrt)), 3);
    out.embedder_vs_transformersjs_cpu = round(Math.min(...r.efficiency.map((m) => m.minCpuVsTransformersjs)), 3);
    out.model = r.efficiency[0]!.model;
  }
  if (r.gateway) {
    const g = r.gateway;
    out.gateway_max_rps_p99_50ms = g.maxRps.gateway;
    out.gateway_max_rps_direct = g.maxRps.direct;
    out.gateway_cpu_ms_per_req_500 = round(g.cpu.totalMs, 3);
    out.gateway_sleeps_per_req_500 = round(g.cpu.sleeps, 1);
    // What the cores could serve if the path had them to itself and CPU were the only limit: an
    // upper bound that does not move with other work on the machine, unlike the measured rate.
    out.gateway_cpu_bound_rps = Math.round((availableParallelism() * 1000) / g.cpu.totalMs);
    out.gateway_added_at_rps = g.at100.rate;
    out.gateway_added_p50_ms = round(g.at100.addedP50Ms);
    out.gateway_added_p99_ms = round(g.at100.addedP99Ms);
    // At 1,000/s when the embedder alone delivers it (else both paths are saturated there).
    if (g.direct.okPerS >= 0.95 * g.rate) out.gateway_added_p50_ms_at_1000 = round(g.addedP50Ms);
    out.gateway_max_rps = g.maxRps.gateway;
    out.gateway_model = r.gatewayModel ?? '';
    if (r.loadAtGateway !== undefined) out.load_average_1m_gateway = round(r.loadAtGateway);
  }
  if (r.pathCost) {
    out.path_cost_cpu_ms_per_req_500 = round(r.pathCost.medianCpuMs, 3);
    out.path_cost_added_p50_ms_100 = round(r.pathCost.at100.addedP50Ms);
    if (r.loadAtGateway !== undefined) out.load_average_1m_gateway = round(r.loadAtGateway);
  }
  if (r.baseline) {
    out.gateway_max_rps_baseline = r.baseline.maxRps;
    out.gateway_cpu_ms_per_req_500_baseline = round(r.baseline.cpu.totalMs, 3);
    out.baseline_tree = r.baseline.tree;
    out.load_average_1m_baseline = round(r.baseline.loadAtStart);
    if (r.gateway && r.baseline.maxRps > 0) out.gateway_max_rps_vs_baseline = round(r.gateway.maxRps.gateway / r.baseline.maxRps);
  }
  if (r.authz) {
    out.authz_checks_per_s = Math.round(r.authz.checksPerS);
    out.authz_p99_ms = round(r.authz.p99Ms);
    out.authz_cpu_ms_per_check = round(r.authz.authzCpuMsPerCheck, 3);
    out.authz_checks_per_core_s = Math.round(r.authz.checksPerCoreS);
  }
  if (r.batch) {
    out.batch_inputs_per_s = round(r.batch.batchInputsPerS, 1);
    out.batch_raw_ort_inputs_per_s = round(r.batch.rawOrt.inputsPerS, 1);
    out.batch_vs_raw_ort = round(r.batch.throughputRatio, 3);
    out.batch_notes_inputs_per_s = round(r.batch.notes.batchInputsPerS, 1);
    out.batch_notes_raw_ort_inputs_per_s = round(r.batch.notes.rawOrtInputsPerS, 1);
    out.batch_notes_vs_raw_ort = round(r.batch.notes.ratio, 3);
    out.batch_online_p99_alone_ms = round(r.batch.online.p99Alone);
    out.batch_online_p99_with_batch_ms = round(r.batch.online.p99WithBatch);
    out.batch_online_p99_ratio = round(r.batch.online.p99Ratio, 3);
    out.batch_online_slowest5_ratio = round(r.batch.online.tailRatio, 3);
    out.batch_fairness_shares = r.batch.fairness.shares.join(' / ');
    out.batch_embedder_rss_mb_peak = round(r.batch.embedderPeakRssMb, 0);
  }
  if (r.wait) {
    const w = r.wait;
    out.wait_cpu_ms_per_req_500 = round(w.wait.cpuMs, 3);
    out.wait_standalone_cpu_ms_per_req_500 = round(w.standalone.cpuMs, 3);
    out.wait_added_cpu_ms_per_req = round(w.addedCpuMs, 3);
    out.wait_cpu_ratio = round(w.cpuRatio, 3);
    out.wait_redis_primary_cpu_ms_per_req = round(w.wait.primaryMs, 3);
    out.wait_redis_replica_cpu_ms_per_req = round(w.wait.replicaMs, 3);
    out.wait_standalone_redis_cpu_ms_per_req = round(w.standalone.primaryMs, 3);
    out.wait_p50_ms_100 = round(w.wait.p50Ms);
    out.wait_p99_ms_100 = round(w.wait.p99Ms);
    out.wait_added_p50_ms_100 = round(w.addedP50Ms);
    out.wait_added_p99_ms_100 = round(w.addedP99Ms);
    out.wait_rounds = w.rounds;
    if (r.loadAtWait !== undefined) out.load_average_1m_wait = round(r.loadAtWait);
  }
  const peaks = [...(r.efficiency ?? []).map((m) => m.embedderRssMb.peak), r.gateway?.memoryMb.embedder?.peak ?? 0];
  if (peaks.some((p) => p > 0)) out.embedder_rss_mb_peak = Math.round(Math.max(...peaks));
  return out;
}

/** Writes bench/results/<name>.json, keeping the other parts' fields from an earlier run when only some parts ran. */
export function writeLatest(r: RunResults, command: string, name = 'latest'): Record<string, unknown> {
  const LATEST = `bench/results/${name}.json`;
  mkdirSync('bench/results', { recursive: true });
  const previous = existsSync(LATEST) ? (JSON.parse(readFileSync(LATEST, 'utf8')) as Record<string, unknown>) : {};
  const cpu = cpus()[0]?.model ?? 'unknown';
  const head = headline(r);
  const detail = { ...((previous.detail as object) ?? {}), ...Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) };
  const merged: Record<string, unknown> = {
    ...previous,
    ...head,
    cores: availableParallelism(),
    cpu,
    memory_gb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    load_average_1m_start: round(r.loadAtStart ?? Number.NaN),
    load_average_1m_end: round(loadavg()[0] ?? Number.NaN),
    date: new Date().toISOString(),
    command,
    label: name,
    detail,
  };
  const goals: Record<string, boolean> = {};
  for (const [field, goal] of Object.entries(GOALS)) {
    const value = merged[field];
    // Not measured (NaN: say, no goal case ran) is neither met nor missed.
    if (typeof value !== 'number' || Number.isNaN(value)) continue;
    goals[field] = 'min' in goal ? value >= goal.min : value <= goal.max;
  }
  merged.goals_met = goals;
  writeFileSync(LATEST, `${JSON.stringify(merged, null, 2)}\n`);
  return merged;
}

const fmt = (x: number | undefined, d = 1): string => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
// Inputs per second: two decimals below 10 (a BERT-large model embeds about half a note a second).
const perS = (x: number | undefined): string => fmt(x, x !== undefined && x < 10 ? 2 : 1);

/** The human table, one block per part. */
export function table(r: RunResults, merged: Record<string, unknown>): string {
  const lines = [...(r.efficiency ?? []).flatMap(efficiencyLines), ...(r.gateway ? gatewayLines(r.gateway, r.gatewayModel) : [])];
  if (r.pathCost) lines.push(...pathCostLines(r.pathCost));
  if (r.baseline) lines.push(...baselineLines(r.baseline));
  if (r.authz) lines.push(...authzLines(r.authz));
  if (r.wait) lines.push(...waitLines(r.wait));
  lines.push(`\nHeadline (bench/results/${String(merged.label ?? 'latest')}.json)`);
  const goals = (merged.goals_met ?? {}) as Record<string, boolean>;
  for (const [k, v] of Object.entries(merged)) {
    if (typeof v === 'object' || k === 'command') continue;
    const goal = k in goals ? (goals[k] ? '  goal met' : '  GOAL MISSED') : '';
    lines.push(`  ${k.padEnd(28)} ${String(v)}${goal}`);
  }
  return lines.join('\n');
}

function efficiencyLines(m: ModelEfficiency): string[] {
  type B = ModelEfficiency['rawOrt']['short×1'];
  const sets = Object.keys(m.rawOrt) as Array<keyof ModelEfficiency['rawOrt']>;
  const each = (f: (set: (typeof sets)[number]) => string): string => sets.map((s) => `${s} ${f(s)}`).join('   ');
  const b = (x: B): string => `${perS(x.inputsPerS)} (batch ${x.bestBatch})`;
  const cpu = (x: B): string => fmt(x.cpuMsPerInput[x.bestBatch], 3);
  const lines = [
    `\nEmbedder efficiency — ${m.model} (inputs/s; each baseline on the texts of that case)`,
    `  raw ORT session.run     ${each((s) => b(m.rawOrt[s]))}`,
    `  raw ORT + tokenize/pool ${each((s) => perS(m.rawOrt[s].pipelineInputsPerS))}`,
    `  transformers.js         ${each((s) => b(m.transformersjs[s]))}`,
    `  CPU ms/input at best batch: raw ORT ${each((s) => cpu(m.rawOrt[s]))}; transformers.js ${each((s) => cpu(m.transformersjs[s]))}`,
    '  embedder over HTTP      case              inputs/s   p50 ms   p99 ms  non-200  ×raw ORT  ×transformers.js  CPU ms/input  CPU ×raw ORT  CPU ×tjs',
  ];
  for (const h of m.http) {
    lines.push(
      `                          ${h.case.padEnd(17)} ${perS(h.inputsPerS).padStart(8)} ${fmt(h.p50Ms).padStart(8)} ${fmt(h.p99Ms).padStart(8)} ${String(h.non200).padStart(8)} ${fmt(h.vsRawOrt, 2).padStart(9)} ${fmt(h.vsTransformersjs, 2).padStart(17)} ${fmt(h.cpuMsPerInput, 3).padStart(13)} ${fmt(h.cpuVsRawOrt, 2).padStart(13)} ${fmt(h.cpuVsTransformersjs, 2).padStart(9)}`,
    );
  }
  lines.push(
    `  1,000 short inputs in one request: float ${fmt(m.thousandInputsMs.float, 0)} ms, base64 ${fmt(m.thousandInputsMs.base64, 0)} ms`,
  );
  lines.push(
    `  embedder RSS MB: idle ${fmt(m.embedderRssMb.idle, 0)}, load ${fmt(m.embedderRssMb.load, 0)}, peak ${fmt(m.embedderRssMb.peak, 0)}`,
  );
  return lines;
}

function gatewayLines(g: GatewayResult, model: string | undefined): string[] {
  const cpu = (c: Record<string, number>): string =>
    Object.entries(c)
      .map(([n, v]) => `${n} ${fmt(v, 2)}`)
      .join(', ');
  const lines = [
    `\nGateway overhead — ${model} at ${g.rate} req/s (one short string)`,
    `  direct   p50 ${fmt(g.direct.p50Ms, 2)} ms  p99 ${fmt(g.direct.p99Ms, 2)} ms  achieved ${fmt(g.direct.okPerS, 0)}/s`,
    `  gateway  p50 ${fmt(g.gateway.p50Ms, 2)} ms  p99 ${fmt(g.gateway.p99Ms, 2)} ms  achieved ${fmt(g.gateway.okPerS, 0)}/s`,
    `  added    p50 ${fmt(g.addedP50Ms, 2)} ms  p99 ${fmt(g.addedP99Ms, 2)} ms`,
    `  CPU ms per request  direct: ${cpu(g.cpuMsPerRequest.direct)}`,
    `                      gateway: ${cpu(g.cpuMsPerRequest.gateway)}`,
  ];
  const s = g.sustainable;
  if (s)
    lines.push(
      `  at ${s.rate} req/s (half the embedder's own max): direct p50 ${fmt(s.directP50Ms, 2)}, gateway p50 ${fmt(s.gatewayP50Ms, 2)}, added p50 ${fmt(s.addedP50Ms, 2)} ms, p99 ${fmt(s.addedP99Ms, 2)} ms`,
    );
  const a = g.at100;
  lines.push(
    `  at ${a.rate} req/s (median of ${a.rounds} alternated pairs): direct p50 ${fmt(a.directP50Ms, 2)}, gateway p50 ${fmt(a.gatewayP50Ms, 2)}, added p50 ${fmt(a.addedP50Ms, 2)} ms, p99 ${fmt(a.addedP99Ms, 2)} ms`,
  );
  lines.push(`  ${cpuLine('whole path', g.cpu)}`);
  lines.push(`  highest rate with p99 < 50 ms: gateway ${g.maxRps.gateway}/s, direct ${g.maxRps.direct}/s`);
  for (const st of g.steps)
    lines.push(
      `    ${st.path.padEnd(8)} ${String(st.rate).padStart(5)}/s → ${fmt(st.okPerS, 0)}/s p99 ${fmt(st.p99Ms, 1)} ms${st.non200 ? ` non-200 ${st.non200}` : ''} ${st.pass ? 'ok' : 'FAIL'}`,
    );
  lines.push('  RSS MB        idle   load   peak(1,000-input requests)');
  for (const [name, mem] of Object.entries(g.memoryMb))
    lines.push(`    ${name.padEnd(10)} ${fmt(mem.idle, 0).padStart(5)} ${fmt(mem.load, 0).padStart(6)} ${fmt(mem.peak, 0).padStart(6)}`);
  return lines;
}

/** CPU per request at a rate: the sum and each process. */
function cpuLine(label: string, c: CpuAtRate): string {
  const each = Object.entries(c.perService)
    .map(([n, v]) => `${n} ${fmt(v, 2)}`)
    .join(', ');
  const line = `${label} CPU at ${c.rate} req/s offered (${fmt(c.okPerS, 0)}/s served, p99 ${fmt(c.p99Ms, 1)} ms): ${fmt(c.totalMs, 2)} ms/request (${each})`;
  const sleeps = Object.entries(c.sleepsPerService)
    .map(([n, v]) => `${n} ${fmt(v, 1)}`)
    .join(', ');
  return `${line}; sleeps ${fmt(c.sleeps, 1)}/request (${sleeps}), preempted ${fmt(c.preemptions, 1)}`;
}

function pathCostLines(p: PathCost): string[] {
  const a = p.at100;
  return [
    `\nPath cost — median whole-path CPU at 500 req/s ${fmt(p.medianCpuMs, 3)} ms/request`,
    ...p.cpuRounds.map((c) => `  ${cpuLine('round', c)}`),
    `  at ${a.rate} req/s (median of ${a.rounds}): direct p50 ${fmt(a.directP50Ms, 2)}, gateway p50 ${fmt(a.gatewayP50Ms, 2)}, added p50 ${fmt(a.addedP50Ms, 2)} ms`,
  ];
}

function baselineLines(b: BaselineResult): string[] {
  const lines = [
    `\nOlder gateway — ${b.tree} (load ${fmt(b.loadAtStart, 1)} at its start)`,
    `  ${cpuLine('whole path', b.cpu)}`,
    `  highest rate with p99 < 50 ms: ${b.maxRps}/s`,
  ];
  for (const st of b.steps)
    lines.push(
      `    ${String(st.rate).padStart(5)}/s → ${fmt(st.okPerS, 0)}/s p99 ${fmt(st.p99Ms, 1)} ms${st.non200 ? ` non-200 ${st.non200}` : ''} ${st.pass ? 'ok' : 'FAIL'}`,
    );
  return lines;
}

function waitLines(w: WaitResult): string[] {
  const side = (name: string, s: WaitResult['wait']): string =>
    `  ${name.padEnd(30)} ${fmt(s.cpuMs, 3).padStart(7)} ms (Redis primary ${fmt(s.primaryMs, 3)}, replica ${fmt(s.replicaMs, 3)})   p50 ${fmt(s.p50Ms, 2)} ms  p99 ${fmt(s.p99Ms, 2)} ms`;
  const lines = [
    `\nWAIT after each usage record (issue 28) — median of ${w.rounds} alternated rounds: CPU per request at ${w.cpuRate} req/s, latency at ${w.latencyRate} req/s`,
    side('standalone Redis, no WAIT', w.standalone),
    side(`replica + WAIT 1 ${w.waitMs}`, w.wait),
    `  added (median of each round's own difference): CPU ${fmt(w.addedCpuMs, 3)} ms/request (Redis ${fmt(w.addedRedisCpuMs, 3)}), ×${fmt(w.cpuRatio, 3)} (rounds ${fmt(w.cpuRatioRange[0], 3)}–${fmt(w.cpuRatioRange[1], 3)}); p50 ${fmt(w.addedP50Ms, 2)} ms, p99 ${fmt(w.addedP99Ms, 2)} ms`,
    `  one Redis primary's core: ${fmt(perCoreRate(w.standalone.primaryMs), 0)} requests/s standalone, ${fmt(perCoreRate(w.wait.primaryMs), 0)} with a replica and WAIT`,
  ];
  for (const x of w.runs)
    lines.push(
      `    round ${x.round} ${x.side.padEnd(10)} load ${fmt(x.load, 2)}  ${cpuLine('whole path', x.cpu)}; at ${x.latency.rate}/s p50 ${fmt(x.latency.p50Ms, 2)} p99 ${fmt(x.latency.p99Ms, 2)} ms${x.latency.non200 ? ` non-200 ${x.latency.non200}` : ''}`,
    );
  return lines;
}

function authzLines(a: AuthzResult): string[] {
  const lines = [
    `\nAuthz capacity — ${fmt(a.checksPerS, 0)} Check/s, p50 ${fmt(a.p50Ms, 2)} ms, p99 ${fmt(a.p99Ms, 2)} ms (${a.inflight} in flight, by ${a.source})`,
    `  CPU per Check: authz ${fmt(a.authzCpuMsPerCheck, 3)} ms (one core's worth: ${fmt(a.checksPerCoreS, 0)} Check/s), gRPC client ${fmt(a.clientCpuMsPerCheck, 3)} ms; stack authz ${fmt(a.stackChecksPerS, 0)} Check/s`,
  ];
  if (a.note) lines.push(`  note: ${a.note}`);
  return lines;
}
