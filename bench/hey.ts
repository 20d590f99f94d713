/**
 * HTTP load through `hey` (Debian package): closed-loop saturation with many workers, or a
 * fixed rate, staggered. One hey process paces each of its workers with a ticker of its own, but
 * all the tickers start together, so `-c 10 -q 10` sends a burst of 10 requests every 100 ms:
 * that measures queueing inside the burst, not the rate. A fixed rate therefore runs one hey
 * process per worker (`-c 1`, rate ÷ workers each), the i-th started i ÷ workers of a period
 * later, so requests arrive evenly spaced (as the "staggered hey" measured).
 * Per-request timings come from hey's CSV, at 0.1 ms resolution.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One hey run: where, what, how hard, how long. */
export interface LoadSpec {
  url: string;
  body: string;
  headers?: Record<string, string>;
  workers: number;
  /** Total requests per second across all workers; omitted = as fast as the workers can go. */
  rate?: number;
  seconds: number;
  timeoutS?: number;
}

/** What a run measured; latencies in ms over the 200 responses only. */
export interface LoadResult {
  requests: number;
  ok: number;
  statuses: Record<string, number>;
  /** 200 responses per second of wall time: first request sent to last response received. */
  okPerS: number;
  wallS: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** The q-quantile (0..1) of ascending values, nearest rank. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

/**
 * The mean of the slowest 5 % (sorted latencies): a tail figure that moves less from run to run
 * than p99, which at ~700 requests a side is the 7th slowest alone.
 */
export function tailMean(sorted: readonly number[]): number {
  const tail = sorted.slice(Math.floor(sorted.length * 0.95));
  return tail.length === 0 ? Number.NaN : tail.reduce((a, b) => a + b, 0) / tail.length;
}

/**
 * Summarises hey's CSV (response-time s, …, status-code, offset s). hey lets the requests in
 * flight at the end of `-z` finish, so the rate is taken over the whole wall time: with a FIFO
 * server that is still saturated until the last response, this does not under-count.
 */
export function summariseHeyCsv(csv: string, minSeconds: number): LoadResult {
  const okTimes: number[] = [];
  const statuses: Record<string, number> = {};
  let requests = 0;
  let wallS = minSeconds;
  for (const line of csv.split('\n')) {
    const cols = line.split(',');
    if (cols.length < 8 || cols[0] === 'response-time') continue;
    requests++;
    const status = cols[6] as string;
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status === '200') okTimes.push(Number(cols[0]) * 1000);
    wallS = Math.max(wallS, Number(cols[7]) + Number(cols[0]));
  }
  return loadResult(okTimes, statuses, requests, wallS);
}

/** A run's LoadResult from the 200s' latencies (ms, any order), every status's count and the wall time. */
export function loadResult(okTimes: number[], statuses: Record<string, number>, requests: number, wallS: number): LoadResult {
  okTimes.sort((a, b) => a - b);
  return {
    requests,
    ok: okTimes.length,
    statuses,
    okPerS: okTimes.length / wallS,
    wallS,
    p50Ms: quantile(okTimes, 0.5),
    p90Ms: quantile(okTimes, 0.9),
    p99Ms: quantile(okTimes, 0.99),
    maxMs: okTimes[okTimes.length - 1] ?? Number.NaN,
  };
}

/** hey's arguments for one process: `workers` connections, each paced at `perWorkerRate` (0: unpaced). */
function heyArgs(spec: LoadSpec, bodyFile: string, workers: number, perWorkerRate: number): string[] {
  const args = ['-z', `${spec.seconds}s`, '-c', String(workers), '-t', String(spec.timeoutS ?? 120), '-m', 'POST'];
  args.push('-T', 'application/json', '-D', bodyFile, '-o', 'csv');
  if (perWorkerRate > 0) args.push('-q', perWorkerRate.toFixed(3));
  for (const [k, v] of Object.entries(spec.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(spec.url);
  return args;
}

/** Shifts the offset column (seconds since that process started) of hey's CSV rows by `delayS`. */
function shiftHeyCsv(csv: string, delayS: number): string {
  if (delayS === 0) return csv;
  return csv
    .split('\n')
    .map((line) => {
      const cols = line.split(',');
      if (cols.length < 8 || cols[0] === 'response-time') return line;
      cols[7] = String(Number(cols[7]) + delayS);
      return cols.join(',');
    })
    .join('\n');
}

/** Runs the load (one hey process, or one per worker, staggered, at a fixed rate) and summarises it. */
export async function runHey(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ctg-bench-'));
  try {
    const bodyFile = join(dir, 'body.json');
    writeFileSync(bodyFile, spec.body);
    const heyRun = async (args: string[], delayS: number): Promise<string> => {
      if (delayS > 0) await new Promise((r) => setTimeout(r, delayS * 1000));
      const { stdout } = await run('hey', args, { maxBuffer: 512 * 1024 * 1024 });
      return shiftHeyCsv(stdout, delayS);
    };
    if (!spec.rate) return summariseHeyCsv(await heyRun(heyArgs(spec, bodyFile, spec.workers, 0), 0), spec.seconds);
    const perWorker = spec.rate / spec.workers;
    const periodS = 1 / perWorker;
    const csvs = await Promise.all(
      Array.from({ length: spec.workers }, (_, i) => heyRun(heyArgs(spec, bodyFile, 1, perWorker), (i * periodS) / spec.workers)),
    );
    return summariseHeyCsv(csvs.join('\n'), spec.seconds);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
