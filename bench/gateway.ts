/**
 * Part 2, gateway overhead: the same one-string requests straight to the embedder (HTTP,
 * keep-alive) and through Envoy + authz (TLS, keep-alive), generated model; added p50/p99 at a
 * fixed 1,000 requests/s and the highest rate whose p99 stays under 50 ms. Part 4 (memory)
 * samples the stack's processes along the way.
 */
import { embeddingBody } from './embedder-service.ts';
import { runHey, type LoadResult } from './hey.ts';
import { cpuMs, residentMemory, type Service } from './processes.ts';
import type { BenchStack } from './stack.ts';

/** Options: seconds per fixed-rate run and per search step. */
export interface GatewayOptions { seconds: number; stepSeconds: number; rates: number[] }

/** The overhead figures and the runs behind them. */
export interface GatewayResult {
  rate: number;
  direct: LoadResult;
  gateway: LoadResult;
  addedP50Ms: number;
  addedP99Ms: number;
  maxRps: { gateway: number; direct: number };
  /** CPU ms each process spent per request during the fixed-rate runs (what caps the rate on 2 cores). */
  cpuMsPerRequest: { direct: Record<string, number>; gateway: Record<string, number> };
  /** When the embedder alone cannot take 1,000/s: the same comparison at half its highest passing rate. */
  sustainable?: { rate: number; addedP50Ms: number; addedP99Ms: number; directP50Ms: number; gatewayP50Ms: number };
  steps: { path: string; rate: number; okPerS: number; p99Ms: number; non200: number; pass: boolean }[];
  memoryMb: Record<string, { idle: number; load: number; peak: number }>;
}

const P99_LIMIT_MS = 50;

/** Enough workers that each needs at most 50 requests/s (hey paces each worker separately). */
function workersFor(rate: number): number {
  return Math.max(10, Math.ceil(rate / 50));
}

type Path = { name: 'direct' | 'gateway'; url: string; headers: Record<string, string> };

function paths(stack: BenchStack): Path[] {
  return [
    // Direct to the embedder, with the model grant authz adds in the gateway path.
    { name: 'direct', url: `${stack.embedderUrl}/v1/embeddings`, headers: stack.directHeaders },
    { name: 'gateway', url: `${stack.gatewayUrl}/v1/embeddings`, headers: { authorization: `Bearer ${stack.apiKey}` } },
  ];
}

async function atRate(path: Path, body: string, rate: number, seconds: number): Promise<LoadResult> {
  return runHey({ url: path.url, headers: path.headers, body, rate, workers: workersFor(rate), seconds, timeoutS: 10 });
}

/** Lower rates tried, highest first, when the first ladder rate already fails. */
const DOWN_LADDER = [750, 500, 300, 200, 100];

/**
 * Highest rate with p99 < 50 ms, every answer 200 and ≥ 95 % of the rate delivered: up the
 * ladder from its first rate until one fails, or down from it until one passes.
 */
async function maxRate(path: Path, body: string, opts: GatewayOptions, steps: GatewayResult['steps']): Promise<number> {
  const attempt = async (rate: number): Promise<boolean> => {
    const r = await atRate(path, body, rate, opts.stepSeconds);
    const non200 = r.requests - r.ok;
    const pass = r.p99Ms < P99_LIMIT_MS && non200 === 0 && r.okPerS >= 0.95 * rate;
    steps.push({ path: path.name, rate, okPerS: r.okPerS, p99Ms: r.p99Ms, non200, pass });
    return pass;
  };
  let best = 0;
  for (const rate of opts.rates) {
    if (!(await attempt(rate))) break;
    best = rate;
  }
  if (best > 0) return best;
  for (const rate of DOWN_LADDER.filter((r) => r < (opts.rates[0] ?? 0))) {
    if (await attempt(rate)) return rate;
  }
  return 0;
}

/** One fixed-rate run with the CPU each service used per request. */
async function measuredRun(path: Path, body: string, rate: number, seconds: number, services: Record<string, Service>): Promise<{ r: LoadResult; cpu: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(services).map(([n, s]) => [n, cpuMs(s.pid)]));
  const r = await atRate(path, body, rate, seconds);
  const cpu = Object.fromEntries(Object.entries(services).map(([n, s]) => [n, (cpuMs(s.pid) - (before[n] as number)) / Math.max(1, r.requests)]));
  return { r, cpu };
}

/** Runs part 2 (and the stack's memory for part 4) against a started bench stack. */
export async function measureGateway(stack: BenchStack, opts: GatewayOptions): Promise<GatewayResult> {
  const body = embeddingBody(stack.modelId, 'short', 1);
  const services = stack.services;
  const rss = (s: Service): number => residentMemory(s.pid).rssMb;
  const memoryMb: GatewayResult['memoryMb'] = {};
  for (const [name, s] of Object.entries(services)) memoryMb[name] = { idle: rss(s), load: 0, peak: 0 };
  const [direct, gateway] = paths(stack) as [Path, Path];

  await atRate(gateway, body, 500, 3); // warm-up: JIT, connection pools, gRPC channel
  await atRate(direct, body, 500, 2);
  const sampler = setInterval(() => {
    for (const [name, s] of Object.entries(services)) memoryMb[name]!.load = Math.max(memoryMb[name]!.load, rss(s));
  }, 250);
  let runs: [Awaited<ReturnType<typeof measuredRun>>, Awaited<ReturnType<typeof measuredRun>>];
  try {
    runs = [await measuredRun(direct, body, 1000, opts.seconds, services), await measuredRun(gateway, body, 1000, opts.seconds, services)];
  } finally {
    clearInterval(sampler);
  }
  const fixed = [runs[0].r, runs[1].r] as const;
  const steps: GatewayResult['steps'] = [];
  const maxRps = { gateway: await maxRate(gateway, body, opts, steps), direct: await maxRate(direct, body, opts, steps) };
  let sustainable: GatewayResult['sustainable'];
  if (maxRps.direct < 1000 && maxRps.direct > 0) {
    const rate = Math.max(50, Math.round(maxRps.direct / 2));
    const [d, g] = [await atRate(direct, body, rate, opts.seconds), await atRate(gateway, body, rate, opts.seconds)];
    sustainable = { rate, addedP50Ms: g.p50Ms - d.p50Ms, addedP99Ms: g.p99Ms - d.p99Ms, directP50Ms: d.p50Ms, gatewayP50Ms: g.p50Ms };
  }

  await thousandInputRequests(stack);
  for (const [name, s] of Object.entries(services)) memoryMb[name]!.peak = residentMemory(s.pid).hwmMb;
  return {
    rate: 1000, direct: fixed[0], gateway: fixed[1],
    addedP50Ms: fixed[1].p50Ms - fixed[0].p50Ms, addedP99Ms: fixed[1].p99Ms - fixed[0].p99Ms, maxRps, steps, memoryMb,
    cpuMsPerRequest: { direct: runs[0].cpu, gateway: runs[1].cpu }, ...(sustainable ? { sustainable } : {}),
  };
}

/** Peak memory: a few 1,000-input requests through the gateway, two at a time. */
async function thousandInputRequests(stack: BenchStack): Promise<void> {
  const body = embeddingBody(stack.modelId, 'short', 1000);
  const r = await runHey({
    url: `${stack.gatewayUrl}/v1/embeddings`, headers: { authorization: `Bearer ${stack.apiKey}` }, body, workers: 2, seconds: 3, timeoutS: 60,
  });
  if (r.ok === 0) throw new Error(`1,000-input requests through the gateway failed: ${JSON.stringify(r.statuses)}`);
}
