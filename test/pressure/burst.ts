/**
 * One burst of concurrent embedding requests through the gateway, as a client library with a
 * connection pool sends them: HTTP/2 sessions opened (TLS done) before the burst, then every
 * request at once. Returns each answer's status, problem code and retry-after.
 */
import { connect, constants as h2, type ClientHttp2Session } from 'node:http2';
import type { Stack } from '../support/stack.js';

export interface BurstAnswer {
  readonly status: number;
  readonly code?: string;
  readonly retryAfter?: string;
  readonly ms: number;
}

/** Stream limit per session, under Envoy's max_concurrent_streams (100). */
const STREAMS_PER_SESSION = 60;

/** One HTTP/2 session to the gateway, TLS done (one connection: one Envoy worker). */
export function openSession(stack: Stack): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(`https://127.0.0.1:${stack.ports.gateway}`, { ca: stack.ca, servername: 'localhost' });
    session.once('error', reject);
    session.once('connect', () => resolve(session));
  });
}

/** One POST /v1/embeddings on `session`, answered with its status, problem code and retry-after. */
export function post(session: ClientHttp2Session, key: string, body: string): Promise<BurstAnswer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const stream = session.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: '/v1/embeddings',
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    });
    let status = 0;
    let retryAfter: string | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (headers) => {
      status = Number(headers[h2.HTTP2_HEADER_STATUS]);
      retryAfter = headers['retry-after'] as string | undefined;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    const done = () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let code: string | undefined;
      if (status !== 200) {
        try {
          code = (JSON.parse(text) as { code?: string }).code;
        } catch {
          code = undefined;
        }
      }
      resolve({ status, code, retryAfter, ms: performance.now() - started });
    };
    stream.on('end', done);
    // A reset stream is an answer too (status 0): the test counts it as a failure.
    stream.on('error', done);
    stream.end(body);
  });
}

/** Sends `count` one-line requests with `key` at once; resolves with every answer. */
export async function burst(stack: Stack, key: string, count: number): Promise<BurstAnswer[]> {
  const sessions = await Promise.all(Array.from({ length: Math.ceil(count / STREAMS_PER_SESSION) }, () => openSession(stack)));
  const body = JSON.stringify({ model: stack.svc.modelId, input: 'Patient reports mild headache since Tuesday.' });
  try {
    return await Promise.all(Array.from({ length: count }, (_, i) => post(sessions[Math.floor(i / STREAMS_PER_SESSION)]!, key, body)));
  } finally {
    for (const session of sessions) session.close();
  }
}

/** Answers counted by kind: "200", "429 rate_limit_exceeded", "503 authorization_unavailable" … */
export function tally(answers: readonly BurstAnswer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const kind =
      a.status === 200
        ? '200'
        : `${a.status} ${a.code ?? '(no problem)'}${a.status === 503 && !a.retryAfter ? ' without retry-after' : ''}`;
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}
