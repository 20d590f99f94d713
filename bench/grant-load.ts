/**
 * HTTP load straight at the embedder, each request with a grant of its own. A grant admits one
 * request (docs/settlement.md), so `hey`, which sends one set of headers for a whole run, drove
 * the embedder with refusals after its first request; this client takes a fresh grant for every
 * request from a pool filled before the timed window (and topped up in the background should it
 * run low), so issuing grants (a Redis write and an HMAC each) stays out of what is measured as
 * far as it can.
 *
 * Closed loop (`workers` requests always in flight) or a fixed rate (requests evenly spaced,
 * each sent on time whatever the ones before it are doing: an open loop). Keep-alive HTTP/1.1,
 * one connection per request in flight, as hey uses. Returns hey's LoadResult.
 */
import { Agent, request } from 'node:http';
import { loadResult, type LoadResult } from './hey.ts';

/** One run: where, what, how hard, how long, and where each request's grant comes from. */
export interface GrantLoadSpec {
  url: string;
  body: string;
  /** Requests in flight at once (closed loop); with `rate`, only how many connections to keep warm. */
  workers: number;
  /** Requests per second, evenly spaced; omitted = closed loop, as fast as `workers` go. */
  rate?: number;
  seconds: number;
  timeoutS?: number;
  /** Where each request's grant comes from; fill it before the timed window (and any CPU reading). */
  grants: GrantPool;
}

/**
 * Grants issued ahead (bench/stack.ts freshGrant), taken once each; refilled in the background
 * below a quarter of `size`.
 */
export class GrantPool {
  private readonly ready: Array<Record<string, string>> = [];
  private filling: Promise<void> | undefined;

  constructor(
    private readonly grant: () => Promise<Record<string, string>>,
    private readonly size = 2_000,
  ) {}

  /** Issues grants until `size` are ready, 100 at a time. */
  fill(): Promise<void> {
    this.filling ??= (async () => {
      while (this.ready.length < this.size) {
        const n = Math.min(100, this.size - this.ready.length);
        this.ready.push(...(await Promise.all(Array.from({ length: n }, () => this.grant()))));
      }
    })().finally(() => (this.filling = undefined));
    return this.filling;
  }

  /** A grant not handed out before. */
  async take(): Promise<Record<string, string>> {
    if (this.ready.length < this.size / 4) void this.fill();
    const next = this.ready.pop();
    if (next) return next;
    await this.fill();
    return this.take();
  }
}

/** Runs the load and summarises it as hey's CSV would be: latencies of the 200s, rate over the wall time. */
export async function runWithGrants(spec: GrantLoadSpec): Promise<LoadResult> {
  const pool = spec.grants;
  const url = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(1, spec.workers) * 4 });
  const body = Buffer.from(spec.body);
  const timeoutMs = (spec.timeoutS ?? 120) * 1000;
  const okTimes: number[] = [];
  const statuses: Record<string, number> = {};
  let requests = 0;

  const one = async (): Promise<void> => {
    const headers = await pool.take();
    const started = performance.now();
    const status = await new Promise<number>((resolve) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'content-length': body.length },
          timeout: timeoutMs,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', () => resolve(0));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(0));
      req.end(body);
    });
    requests += 1;
    statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
    if (status === 200) okTimes.push(performance.now() - started);
  };

  const start = performance.now();
  const end = start + spec.seconds * 1000;
  if (spec.rate) {
    // Open loop: the i-th request is due at start + i / rate, sent then even if others are slow.
    const inFlight: Array<Promise<void>> = [];
    const periodMs = 1000 / spec.rate;
    for (let i = 0; ; i += 1) {
      const due = start + i * periodMs;
      if (due >= end) break;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      inFlight.push(one());
    }
    await Promise.all(inFlight);
  } else {
    await Promise.all(
      Array.from({ length: spec.workers }, async () => {
        while (performance.now() < end) await one();
      }),
    );
  }
  const wallS = Math.max(spec.seconds, (performance.now() - start) / 1000);
  agent.destroy();
  return loadResult(okTimes, statuses, requests, wallS);
}
