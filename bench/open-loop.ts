/**
 * An open-loop HTTP/2 load over TLS: requests leave at a fixed rate whatever the answers do (as
 * a flood does; a closed loop would slow down with the gateway and hide the harm), spread over
 * several connections, each with headers of its own (a fresh random key per junk request).
 *
 * As a module: `openLoop(spec)`. As a process (the junk flood runs in its own, so its event loop
 * does not delay the legitimate client's clock):
 *   node --import tsx bench/open-loop.ts <port> <caFile> <rate> <seconds> <sessions> [sourceAddress[,sourceAddress…]]
 * prints one JSON line: { sent, statuses, seconds }.
 */
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, constants as h2, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

/** One open-loop run. */
export interface OpenLoopSpec {
  readonly port: number;
  readonly ca: Buffer;
  /** Requests per second, sent in 5 ms slices. */
  readonly rate: number;
  readonly seconds: number;
  readonly sessions: number;
  /** The request body (the same for all) and each request's own headers. */
  readonly body: string;
  readonly headers: () => Record<string, string>;
  /** Requests in flight at most; past it a due request is not sent and counted as "skipped". */
  readonly maxInFlight?: number;
  readonly timeoutMs?: number;
  /** The source address to connect from (another loopback address is another client to Envoy); several: the sessions take them in turn. */
  readonly localAddress?: string | readonly string[];
}

/**
 * Where a 200's time went, from its response headers: Envoy's `x-envoy-upstream-service-time`
 * (the embedder's whole answer, as Envoy saw it) and the embedder's own `x-queue-time` and
 * `x-inference-time`, in whole milliseconds. The rest of the latency is the edge (client, TLS,
 * Envoy, authz's Check).
 */
export interface ServedTiming {
  readonly upstreamMs: number;
  readonly queueMs: number;
  readonly inferenceMs: number;
}

/** One request's status (0: no answer), latency in ms, and its timing headers where it has them. */
export interface LoopAnswer {
  readonly status: number;
  readonly ms: number;
  readonly timing?: ServedTiming;
}

/** Every request's answer, in order sent. */
export interface OpenLoopResult {
  readonly sent: number;
  readonly statuses: Record<string, number>;
  readonly latencies: LoopAnswer[];
  readonly seconds: number;
}

function servedTiming(headers: IncomingHttpHeaders): ServedTiming | undefined {
  const [upstreamMs, queueMs, inferenceMs] = ['x-envoy-upstream-service-time', 'x-queue-time', 'x-inference-time'].map((name) =>
    Number(headers[name]),
  );
  return [upstreamMs, queueMs, inferenceMs].every(Number.isFinite)
    ? { upstreamMs: upstreamMs!, queueMs: queueMs!, inferenceMs: inferenceMs! }
    : undefined;
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const letters = (n: number): string => Array.from({ length: n }, () => LETTERS[randomInt(26)]).join('');

/** A well-formed API key that exists nowhere: a fresh random id every time. */
export function junkKey(prefix = 'CTG'): string {
  return `${prefix}_${letters(12)}_${letters(38)}`;
}

/** One request on `session`; resolves with its status (0 on error or timeout) and latency. */
export function send(session: ClientHttp2Session, body: string, headers: Record<string, string>, timeoutMs: number): Promise<LoopAnswer> {
  const start = performance.now();
  return new Promise((done) => {
    let status = 0;
    let timing: ServedTiming | undefined;
    const finish = () => done({ status, ms: performance.now() - start, ...(timing ? { timing } : {}) });
    try {
      const stream = session.request({
        [h2.HTTP2_HEADER_METHOD]: 'POST',
        [h2.HTTP2_HEADER_PATH]: '/v1/embeddings',
        'content-type': 'application/json',
        ...headers,
      });
      stream.on('response', (h) => {
        status = Number(h[h2.HTTP2_HEADER_STATUS]);
        timing = servedTiming(h);
      });
      stream.on('data', () => undefined);
      stream.on('close', finish);
      stream.on('error', () => (status = 0));
      stream.setTimeout(timeoutMs, () => {
        status = 0;
        stream.close(h2.NGHTTP2_CANCEL);
      });
      stream.end(body);
    } catch {
      finish();
    }
  });
}

/** Opens `n` TLS HTTP/2 connections to the gateway, from `localAddress` (or each of them in turn). */
export async function openSessions(
  port: number,
  ca: Buffer,
  n: number,
  localAddress?: string | readonly string[],
): Promise<ClientHttp2Session[]> {
  const sources = typeof localAddress === 'string' ? [localAddress] : (localAddress ?? []);
  return Promise.all(
    Array.from(
      { length: n },
      (_, i) =>
        new Promise<ClientHttp2Session>((ok, fail) => {
          const source = sources[i % Math.max(1, sources.length)];
          const session = connect(`https://127.0.0.1:${port}`, {
            ca,
            servername: 'localhost',
            ...(source ? { localAddress: source } : {}),
          });
          session.once('connect', () => ok(session));
          session.once('error', fail);
          session.on('error', () => undefined);
        }),
    ),
  );
}

/** Sends `rate` requests per second for `seconds`, open loop; resolves once every answer is in. */
export async function openLoop(spec: OpenLoopSpec): Promise<OpenLoopResult> {
  const sessions = await openSessions(spec.port, spec.ca, spec.sessions, spec.localAddress);
  const maxInFlight = spec.maxInFlight ?? 20_000;
  const pending: Array<Promise<LoopAnswer>> = [];
  const statuses: Record<string, number> = {};
  let inFlight = 0;
  let due = 0;
  const started = performance.now();
  await new Promise<void>((finished) => {
    const tick = setInterval(() => {
      const elapsed = (performance.now() - started) / 1000;
      const target = Math.floor(Math.min(elapsed, spec.seconds) * spec.rate);
      for (; due < target; due += 1) {
        if (inFlight >= maxInFlight) {
          statuses.skipped = (statuses.skipped ?? 0) + 1;
          continue;
        }
        inFlight += 1;
        const session = sessions[due % sessions.length]!;
        pending.push(
          send(session, spec.body, spec.headers(), spec.timeoutMs ?? 10_000).then((r) => {
            inFlight -= 1;
            statuses[r.status] = (statuses[r.status] ?? 0) + 1;
            return r;
          }),
        );
      }
      if (elapsed >= spec.seconds) {
        clearInterval(tick);
        finished();
      }
    }, 5);
  });
  const latencies = await Promise.all(pending);
  for (const session of sessions) session.close();
  return { sent: due, statuses, latencies, seconds: (performance.now() - started) / 1000 };
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const [port, caFile, rate, seconds, sessions, localAddress] = process.argv.slice(2);
  const body = JSON.stringify({ model: 'any', input: 'junk' });
  const result = await openLoop({
    port: Number(port),
    ca: readFileSync(caFile!),
    rate: Number(rate),
    seconds: Number(seconds),
    sessions: Number(sessions),
    body,
    headers: () => ({ authorization: `Bearer ${junkKey()}` }),
    timeoutMs: 5_000,
    ...(localAddress ? { localAddress: localAddress.split(',') } : {}),
  });
  process.stdout.write(`${JSON.stringify({ sent: result.sent, statuses: result.statuses, seconds: result.seconds })}\n`);
}
