/**
 * The arithmetic of the WAIT part (bench/wait.ts), kept pure so a unit test checks it: rounds of
 * the same gateway measured alternately without a replica (A: standalone Redis, no WAIT) and
 * with one (B: a replica attached, SETTLEMENT_MIN_REPLICAS=1), summarised by medians, and the
 * cost of B over A as the median of each round's own difference (or ratio), so that a change in
 * the machine's load between rounds hits both sides of a pair alike.
 */

/** One side's figures in one round. */
export interface WaitSample {
  /** Whole path's CPU ms per request at the CPU rate: Envoy + authz + embedder + every Redis. */
  cpuMs: number;
  /** CPU ms per request of the Redis primary (A's only Redis), and of the replica (0 for A). */
  primaryMs: number;
  replicaMs: number;
  /** Latency at the latency rate, over the 200s. */
  p50Ms: number;
  p99Ms: number;
}

/** What the rounds give. */
export interface WaitSummary {
  rounds: number;
  /** Medians of each side over the rounds. */
  standalone: WaitSample;
  wait: WaitSample;
  /** Median over rounds of (B − A): whole-path CPU, primary + replica CPU, p50, p99. */
  addedCpuMs: number;
  addedRedisCpuMs: number;
  addedP50Ms: number;
  addedP99Ms: number;
  /** Median over rounds of B ÷ A whole-path CPU, and the lowest and highest of those ratios. */
  cpuRatio: number;
  cpuRatioRange: [number, number];
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const FIELDS = ['cpuMs', 'primaryMs', 'replicaMs', 'p50Ms', 'p99Ms'] as const;

/** Summarises alternated pairs (each round: A then B, or B then A). */
export function summarizeWait(pairs: ReadonlyArray<{ standalone: WaitSample; wait: WaitSample }>): WaitSummary {
  if (pairs.length === 0) throw new Error('no rounds to summarise');
  const side = (pick: (p: (typeof pairs)[number]) => WaitSample): WaitSample =>
    Object.fromEntries(FIELDS.map((f) => [f, median(pairs.map((p) => pick(p)[f]))])) as unknown as WaitSample;
  const diff = (f: (s: WaitSample) => number): number => median(pairs.map((p) => f(p.wait) - f(p.standalone)));
  const ratios = pairs.map((p) => p.wait.cpuMs / p.standalone.cpuMs);
  return {
    rounds: pairs.length,
    standalone: side((p) => p.standalone),
    wait: side((p) => p.wait),
    addedCpuMs: diff((s) => s.cpuMs),
    addedRedisCpuMs: diff((s) => s.primaryMs + s.replicaMs),
    addedP50Ms: diff((s) => s.p50Ms),
    addedP99Ms: diff((s) => s.p99Ms),
    cpuRatio: median(ratios),
    cpuRatioRange: [Math.min(...ratios), Math.max(...ratios)],
  };
}

/**
 * Requests/s one unit carries at a CPU cost per request: `cores` × 1,000 ÷ ms (the Capacity
 * plan's reading of a per-request figure).
 */
export function perCoreRate(msPerRequest: number, cores = 1): number {
  return msPerRequest > 0 ? (cores * 1000) / msPerRequest : Number.POSITIVE_INFINITY;
}
