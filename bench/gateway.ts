/**
 * Part 2, gateway overhead: the same one-string requests straight to the embedder (HTTP,
 * keep-alive) and through Envoy + authz (TLS, keep-alive), generated model. The figures:
 * the highest offered rate whose p99 stays under 50 ms (maxRate), the whole path's CPU per
 * request at 500 req/s offered (Envoy + authz + embedder + Redis), and the added p50 at
 * 100 req/s. Also added p50/p99 at 1,000 req/s. Part 4 (memory) samples the processes.
 */
import { embeddingBody } from './embedder-service.ts';
import { GrantPool, runWithGrants } from './grant-load.ts';
import { runHey, type LoadResult } from './hey.ts';
import { contextSwitches, cpuMs, residentMemory, type Service } from './processes.ts';
import type { BenchStack } from './stack.ts';

/** Options: seconds per fixed-rate run and per search step. */
export interface GatewayOptions {
  seconds: number;
  stepSeconds: number;
  rates: number[];
  /** Traffic at the CPU rate right before CPU per request is read (CPU_WARM_UP_S; a quick run less). */
  warmUpS: number;
}

/**
 * Seconds of traffic at the measured rate before CPU per request is read: a gateway pod serves for
 * hours, so the figure is its steady state. V8 keeps compiling the request path (TurboFan, on its
 * platform threads) for the first ~20 s at 500 req/s: consecutive 10 s windows after a 3 s
 * warm-up read 2.55, 2.53, 2.40, 2.41, 2.45, 2.46 ms (2026-11-27, fifth round), the first window
 * 0.1-0.3 ms above the rest, mostly the embedder's and authz's.
 */
export const CPU_WARM_UP_S = 30;

/** The overhead figures and the runs behind them. */
export interface GatewayResult {
  rate: number;
  direct: LoadResult;
  gateway: LoadResult;
  addedP50Ms: number;
  addedP99Ms: number;
  maxRps: { gateway: number; direct: number };
  /** Gateway − direct at 100 req/s, where neither path queues: the median of `rounds` alternated pairs. */
  at100: { rate: number; rounds: number; directP50Ms: number; gatewayP50Ms: number; addedP50Ms: number; addedP99Ms: number };
  /** Through the gateway at 500 req/s offered: each process's CPU ms per request served, and their sum. */
  cpu: CpuAtRate;
  /** CPU ms each process spent per request during the fixed-rate runs (what caps the rate on 2 cores). */
  cpuMsPerRequest: { direct: Record<string, number>; gateway: Record<string, number> };
  /** When the embedder alone cannot take 1,000/s: the same comparison at half its highest passing rate. */
  sustainable?: { rate: number; addedP50Ms: number; addedP99Ms: number; directP50Ms: number; gatewayP50Ms: number };
  steps: { path: string; rate: number; okPerS: number; p99Ms: number; non200: number; pass: boolean }[];
  memoryMb: Record<string, { idle: number; load: number; peak: number }>;
}

const P99_LIMIT_MS = 50;

/** CPU per request of each process during one fixed-rate run, and the whole path's sum. */
export interface CpuAtRate {
  rate: number;
  okPerS: number;
  p99Ms: number;
  non200: number;
  perService: Record<string, number>;
  totalMs: number;
  /**
   * Voluntary context switches per request served, each process's threads together: how often the
   * path's threads went to sleep and were woken, per request (docs/benchmarks-history.md, eighth
   * round, for why the count matters).
   */
  sleepsPerService: Record<string, number>;
  sleeps: number;
  /** Involuntary context switches per request served, the path's threads together. */
  preemptions: number;
}

/** Enough workers that each needs at most 50 requests/s (hey paces each worker separately). */
function workersFor(rate: number): number {
  return Math.max(10, Math.ceil(rate / 50));
}

/**
 * Where a load goes: a name for the steps table, the URL and the headers every request sends, or
 * (straight at the embedder) where each request's own grant comes from.
 */
export type Path = { name: string; url: string; headers: Record<string, string>; grant?: () => Promise<Record<string, string>> };

function paths(stack: BenchStack): Path[] {
  return [
    // Direct to the embedder, with the model grant authz adds in the gateway path.
    // Each request its own grant: one admits one request (bench/grant-load.ts).
    { name: 'direct', url: `${stack.embedderUrl}/v1/embeddings`, headers: {}, grant: stack.freshGrant },
    { name: 'gateway', url: `${stack.gatewayUrl}/v1/embeddings`, headers: { authorization: `Bearer ${stack.apiKey}` } },
  ];
}

export async function atRate(path: Path, body: string, rate: number, seconds: number): Promise<LoadResult> {
  if (path.grant) {
    // Issued before the run, so the services' CPU readings hold little of it (a Redis write each).
    const grants = new GrantPool(path.grant, Math.min(20_000, Math.ceil(rate * seconds * 1.1)));
    await grants.fill();
    return runWithGrants({ url: path.url, body, rate, workers: workersFor(rate), seconds, timeoutS: 10, grants });
  }
  return runHey({ url: path.url, headers: path.headers, body, rate, workers: workersFor(rate), seconds, timeoutS: 10 });
}

/** Lower rates tried, highest first, when the first ladder rate already fails. */
const DOWN_LADDER = [750, 500, 300, 200, 100];

/**
 * The gateway_max_rps_p99_50ms: the highest offered rate (hey, evenly paced, one short
 * string per request, for stepSeconds) with p99 < 50 ms over the 200s, every answer 200 and
 * ≥ 95 % of the rate delivered. Up the ladder from its first rate until one fails, or down from
 * it until one passes; so the figure is a ladder rate, a lower bound of the true maximum.
 */
export async function maxRate(
  path: Path,
  body: string,
  opts: Omit<GatewayOptions, 'warmUpS'>,
  steps: GatewayResult['steps'],
): Promise<number> {
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

/** One fixed-rate run with the CPU each service used per request, and its threads' context switches. */
async function measuredRun(
  path: Path,
  body: string,
  rate: number,
  seconds: number,
  services: Record<string, Service>,
): Promise<{ r: LoadResult; cpu: Record<string, number>; switches: Record<string, { voluntary: number; involuntary: number }> }> {
  const entries = Object.entries(services);
  const before = Object.fromEntries(entries.map(([n, s]) => [n, { cpu: cpuMs(s.pid), switches: contextSwitches(s.pid) }]));
  const r = await atRate(path, body, rate, seconds);
  const served = Math.max(1, r.requests);
  const cpu = Object.fromEntries(entries.map(([n, s]) => [n, (cpuMs(s.pid) - before[n]!.cpu) / served]));
  const switches = Object.fromEntries(
    entries.map(([n, s]) => {
      const now = contextSwitches(s.pid);
      const was = before[n]!.switches;
      return [n, { voluntary: (now.voluntary - was.voluntary) / served, involuntary: (now.involuntary - was.involuntary) / served }];
    }),
  );
  return { r, cpu, switches };
}

/**
 * The gateway_cpu_ms_per_req_500: CPU time (user + system, /proc/<pid>/stat) of every
 * process on the path during a run at `rate` offered, divided by the requests it answered.
 */
export async function cpuAtRate(
  path: Path,
  body: string,
  rate: number,
  seconds: number,
  services: Record<string, Service>,
): Promise<CpuAtRate> {
  const { r, cpu, switches } = await measuredRun(path, body, rate, seconds, services);
  const totalMs = Object.values(cpu).reduce((a, b) => a + b, 0);
  const sum = (pick: (x: { voluntary: number; involuntary: number }) => number) => Object.values(switches).reduce((a, x) => a + pick(x), 0);
  return {
    rate,
    okPerS: r.okPerS,
    p99Ms: r.p99Ms,
    non200: r.requests - r.ok,
    perService: cpu,
    totalMs,
    sleepsPerService: Object.fromEntries(Object.entries(switches).map(([n, x]) => [n, x.voluntary])),
    sleeps: sum((x) => x.voluntary),
    preemptions: sum((x) => x.involuntary),
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The gateway_added_p50_ms: gateway − direct p50 at 100 req/s, alternated so drift in the machine's load hits both. */
async function addedAt100(direct: Path, gateway: Path, body: string, seconds: number, rounds: number): Promise<GatewayResult['at100']> {
  const rate = 100;
  const pairs: { d: LoadResult; g: LoadResult }[] = [];
  for (let i = 0; i < rounds; i++)
    pairs.push({ d: await atRate(direct, body, rate, seconds), g: await atRate(gateway, body, rate, seconds) });
  const directP50Ms = median(pairs.map((p) => p.d.p50Ms));
  const gatewayP50Ms = median(pairs.map((p) => p.g.p50Ms));
  return {
    rate,
    rounds,
    directP50Ms,
    gatewayP50Ms,
    addedP50Ms: median(pairs.map((p) => p.g.p50Ms - p.d.p50Ms)),
    addedP99Ms: median(pairs.map((p) => p.g.p99Ms - p.d.p99Ms)),
  };
}

/** Runs part 2 (and the stack's memory for part 4) against a started bench stack; `redis` is the bench's own. */
export async function measureGateway(stack: BenchStack, opts: GatewayOptions, redis?: Service): Promise<GatewayResult> {
  const body = embeddingBody(stack.modelId, 'short', 1);
  const services: Record<string, Service> = { ...stack.services, ...(redis ? { redis } : {}) };
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
  await atRate(gateway, body, 500, opts.warmUpS);
  const cpu = await cpuAtRate(gateway, body, 500, opts.seconds, services);
  const at100 = await addedAt100(direct, gateway, body, opts.seconds, opts.seconds >= 10 ? 3 : 1);
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
    rate: 1000,
    direct: fixed[0],
    gateway: fixed[1],
    addedP50Ms: fixed[1].p50Ms - fixed[0].p50Ms,
    addedP99Ms: fixed[1].p99Ms - fixed[0].p99Ms,
    maxRps,
    at100,
    cpu,
    steps,
    memoryMb,
    cpuMsPerRequest: { direct: runs[0].cpu, gateway: runs[1].cpu },
    ...(sustainable ? { sustainable } : {}),
  };
}

/** A tuning run's figures (part `cost`): the whole path's CPU at 500 req/s and the added p50 at 100, each over rounds. */
export interface PathCost {
  cpuRounds: CpuAtRate[];
  medianCpuMs: number;
  at100: GatewayResult['at100'];
}

/** Part `cost`, for comparing variants (bench/variant.sh): only the two per-request costs, repeated. */
export async function measurePathCost(
  stack: BenchStack,
  seconds: number,
  rounds: number,
  warmUpS: number,
  redis?: Service,
): Promise<PathCost> {
  const body = embeddingBody(stack.modelId, 'short', 1);
  const services: Record<string, Service> = { ...stack.services, ...(redis ? { redis } : {}) };
  const [direct, gateway] = paths(stack) as [Path, Path];
  await atRate(gateway, body, 500, warmUpS); // warm-up: JIT (CPU_WARM_UP_S), connection pools, gRPC channel
  await atRate(direct, body, 500, 2);
  const cpuRounds: CpuAtRate[] = [];
  for (let i = 0; i < rounds; i++) cpuRounds.push(await cpuAtRate(gateway, body, 500, seconds, services));
  const at100 = await addedAt100(direct, gateway, body, seconds, rounds);
  return { cpuRounds, medianCpuMs: median(cpuRounds.map((c) => c.totalMs)), at100 };
}

/** Peak memory: a few 1,000-input requests through the gateway, two at a time. */
async function thousandInputRequests(stack: BenchStack): Promise<void> {
  const body = embeddingBody(stack.modelId, 'short', 1000);
  const r = await runHey({
    url: `${stack.gatewayUrl}/v1/embeddings`,
    headers: { authorization: `Bearer ${stack.apiKey}` },
    body,
    workers: 2,
    seconds: 3,
    timeoutS: 60,
  });
  if (r.ok === 0) throw new Error(`1,000-input requests through the gateway failed: ${JSON.stringify(r.statuses)}`);
}
