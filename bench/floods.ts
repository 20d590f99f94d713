/**
 * Hostile-client floods against a running gateway, each measured while a legitimate client keeps
 * sending small embedding requests: idle TLS connections, slow request bodies, and HTTP/2 streams
 * with unfinished bodies. Used by the bounded test (test/e2e/floods.test.ts) and by
 * `npx tsx bench/floods.ts` for the figures of docs/security.md. Loopback only; every loop is
 * bounded in count and time and ends by itself.
 */
import { readFileSync } from 'node:fs';
import { connect as http2Connect, constants as h2, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

/** Where the gateway listens and how a legitimate client calls it. */
export interface FloodTarget {
  readonly port: number;
  readonly ca: Buffer;
  readonly envoyPid: number;
  readonly apiKey: string;
  readonly modelId: string;
}

/** What the legitimate client saw during a flood. */
export interface LegitStats {
  readonly sent: number;
  readonly ok: number;
  readonly p50Ms: number;
  readonly maxMs: number;
}

/** One flood's figures. */
export interface FloodResult {
  readonly name: string;
  readonly attackers: number;
  /** How the gateway answered the attackers, e.g. { 'closed by idle timeout': 500 }. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Seconds from the flood's start until the gateway had let go of every attacker. */
  readonly releasedAfterS: number | null;
  readonly envoyRssMb: { readonly before: number; readonly peak: number; readonly after: number };
  readonly legit: LegitStats;
}

/** Resident memory of a process in MiB (Linux /proc). */
export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends one small embedding request every `everyMs` until `stop` resolves. */
async function legitimateClient(target: FloodTarget, stop: Promise<void>, everyMs = 100): Promise<LegitStats> {
  const latencies: number[] = [];
  let sent = 0;
  let stopped = false;
  void stop.then(() => (stopped = true));
  const body = JSON.stringify({ model: target.modelId, input: 'Patient reports mild headache.' });
  while (!stopped) {
    sent++;
    const start = performance.now();
    const status = await http2Once(target, body).catch(() => 0);
    if (status === 200) latencies.push(performance.now() - start);
    await sleep(everyMs);
  }
  latencies.sort((a, b) => a - b);
  return {
    sent,
    ok: latencies.length,
    p50Ms: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0),
    maxMs: Math.round(latencies.at(-1) ?? 0),
  };
}

function http2Once(target: FloodTarget, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`https://127.0.0.1:${target.port}`, { ca: target.ca, servername: 'localhost' });
    session.on('error', reject);
    const stream = session.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: '/v1/embeddings',
      'content-type': 'application/json',
      authorization: `Bearer ${target.apiKey}`,
    });
    let status = 0;
    stream.on('response', (h) => (status = Number(h[h2.HTTP2_HEADER_STATUS])));
    stream.on('data', () => undefined);
    stream.on('end', () => {
      session.close();
      resolve(status);
    });
    stream.on('error', (e) => {
      session.destroy();
      reject(e);
    });
    stream.setTimeout(30_000, () => stream.close());
    stream.end(body);
  });
}

/** Runs `attack` beside a legitimate client, sampling Envoy's memory every 200 ms. */
async function measured(
  name: string,
  target: FloodTarget,
  attackers: number,
  attack: () => Promise<{ outcomes: Record<string, number>; releasedAfterS: number | null }>,
): Promise<FloodResult> {
  const before = rssMb(target.envoyPid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(target.envoyPid))), 200);
  let endAttack!: () => void;
  const attackDone = new Promise<void>((r) => (endAttack = r));
  const legit = legitimateClient(target, attackDone);
  try {
    const { outcomes, releasedAfterS } = await attack();
    endAttack();
    return { name, attackers, outcomes, releasedAfterS, envoyRssMb: { before, peak, after: rssMb(target.envoyPid) }, legit: await legit };
  } finally {
    endAttack();
    clearInterval(sampler);
  }
}

function count(outcomes: Record<string, number>, key: string): void {
  outcomes[key] = (outcomes[key] ?? 0) + 1;
}

/** Opens `n` TLS connections that never send a request; waits up to `holdS` for Envoy to close them. */
export function idleConnectionFlood(target: FloodTarget, n: number, holdS: number): Promise<FloodResult> {
  return measured('idle TLS connections', target, n, async () => {
    const start = performance.now();
    const outcomes: Record<string, number> = {};
    const sockets: TLSSocket[] = [];
    let closed = 0;
    let lastClose = 0;
    for (let i = 0; i < n; i += 100) {
      const batch = Array.from(
        { length: Math.min(100, n - i) },
        () =>
          new Promise<void>((resolve) => {
            const socket = tlsConnect(
              { host: '127.0.0.1', port: target.port, servername: 'localhost', ca: target.ca, ALPNProtocols: ['http/1.1'] },
              () => resolve(),
            );
            socket.on('error', () => resolve());
            socket.on('close', () => {
              closed++;
              lastClose = performance.now();
            });
            sockets.push(socket);
          }),
      );
      await Promise.all(batch);
    }
    const deadline = performance.now() + holdS * 1000;
    while (closed < n && performance.now() < deadline) await sleep(200);
    for (const s of sockets) s.destroy();
    outcomes[closed >= n ? 'closed by the gateway' : 'still open at the end'] = closed >= n ? n : n - closed;
    return { outcomes, releasedAfterS: closed >= n ? round((lastClose - start) / 1000) : null };
  });
}

/**
 * Starts `n` HTTP/1.1 uploads declaring 1 MiB and trickling 16 bytes a second, with `key` (or
 * none); records how and when each ended. Keyless ones must be refused at once; keyed ones end at
 * the whole-request timeout.
 */
export function slowBodyFlood(target: FloodTarget, n: number, key: string | undefined, holdS: number): Promise<FloodResult> {
  return measured(key ? 'slow bodies, valid key' : 'slow bodies, no key', target, n, async () => {
    const start = performance.now();
    const outcomes: Record<string, number> = {};
    let lastEnd = 0;
    const uploads = Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const socket = tlsConnect(
            { host: '127.0.0.1', port: target.port, servername: 'localhost', ca: target.ca, ALPNProtocols: ['http/1.1'] },
            () => {
              socket.write(
                `POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}\r\n`,
              );
            },
          );
          const trickle = setInterval(() => socket.writable && socket.write('{"pad":"xxxxxxx"'), 1000);
          let head = '';
          let done = false;
          const end = (how: string) => {
            if (done) return;
            done = true;
            clearInterval(trickle);
            count(outcomes, how);
            lastEnd = performance.now();
            socket.destroy();
            resolve();
          };
          socket.on('data', (c: Buffer) => {
            head += c.toString('latin1');
            const status = /^HTTP\/1\.1 (\d{3})/.exec(head);
            if (status) end(`answered ${status[1]}`);
          });
          socket.on('close', () => end('closed without an answer'));
          socket.on('error', () => undefined);
          setTimeout(() => end('still uploading at the end'), holdS * 1000);
        }),
    );
    await Promise.all(uploads);
    return { outcomes, releasedAfterS: round((lastEnd - start) / 1000) };
  });
}

/**
 * `connections` HTTP/2 connections × `streams` streams, each declaring a 1 MiB body and pushing as
 * much of it as flow control allows, never finishing; with `key` or none.
 */
export function h2StreamFlood(
  target: FloodTarget,
  connections: number,
  streams: number,
  key: string | undefined,
  holdS: number,
): Promise<FloodResult> {
  return measured(key ? 'HTTP/2 streams, valid key' : 'HTTP/2 streams, no key', target, connections * streams, async () => {
    const start = performance.now();
    const outcomes: Record<string, number> = {};
    let lastEnd = 0;
    const sessions: ClientHttp2Session[] = [];
    const chunk = Buffer.alloc(16_384, 0x61);
    const all: Promise<void>[] = [];
    for (let c = 0; c < connections; c++) {
      const session = http2Connect(`https://127.0.0.1:${target.port}`, {
        ca: target.ca,
        servername: 'localhost',
        peerMaxConcurrentStreams: streams,
      });
      session.on('error', () => undefined);
      sessions.push(session);
      for (let s = 0; s < streams; s++) {
        all.push(
          new Promise<void>((resolve) => {
            const stream = session.request({
              [h2.HTTP2_HEADER_METHOD]: 'POST',
              [h2.HTTP2_HEADER_PATH]: '/v1/embeddings',
              'content-type': 'application/json',
              'content-length': '1048576',
              ...(key ? { authorization: `Bearer ${key}` } : {}),
            });
            let done = false;
            const end = (how: string) => {
              if (done) return;
              done = true;
              count(outcomes, how);
              lastEnd = performance.now();
              stream.close();
              resolve();
            };
            // Up to one byte short of the declared length: the body never completes.
            let left = 1_048_575;
            const push = () => {
              while (!done && left > 0) {
                const piece = chunk.subarray(0, Math.min(chunk.length, left));
                left -= piece.length;
                if (!stream.write(piece)) return;
              }
            };
            stream.on('drain', push);
            push();
            stream.on('response', (h) => end(`answered ${h[h2.HTTP2_HEADER_STATUS]}`));
            stream.on('error', () => end('reset'));
            stream.on('close', () => end('closed without an answer'));
            setTimeout(() => end('still uploading at the end'), holdS * 1000);
          }),
        );
      }
    }
    await Promise.all(all);
    for (const s of sessions) s.destroy();
    return { outcomes, releasedAfterS: round((lastEnd - start) / 1000) };
  });
}

const round = (x: number) => Math.round(x * 10) / 10;
