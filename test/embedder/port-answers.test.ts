/**
 * Everything the embedder's own port answers (Envoy's health checks, Prometheus, anyone inside
 * the network) is the gateway's problem body, also what Node's parser refuses before any route
 * sees it; and the probes that ask every second stay out of the log unless they fail.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { captureLogs, ensureTestModel, scrapeMetrics, startTestEmbedder, type TestEmbedder } from '../support/embedder-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const logs = captureLogs();
let embedder: TestEmbedder;
let port: number;
let draining = false;

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel(), { logStream: logs.stream, draining: () => draining });
  await embedder.app.listen({ host: '127.0.0.1', port: 0 });
  port = (embedder.app.server.address() as AddressInfo).port;
});
afterAll(async () => embedder?.close());

/** Writes `text` on a fresh TCP connection; resolves with all that was read until it closed. */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(text));
    let out = '';
    socket.on('data', (chunk: Buffer) => (out += chunk.toString('latin1')));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no close within 5 s; read: ${out.slice(0, 200)}`)));
  });
}

function expectRawProblem(response: string, status: number, code: string): void {
  const [head = '', body = ''] = response.split('\r\n\r\n');
  expect(head, response).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(head.toLowerCase()).toContain(`content-type: ${PROBLEM_CONTENT_TYPE}`);
  expect(head.toLowerCase()).toMatch(/x-request-id: [0-9a-f-]{36}/);
  expect(JSON.parse(body)).toMatchObject({ status, code });
}

describe("what Node's parser refuses is a problem body too, not Fastify's default JSON", () => {
  it.each([
    ['a header line without a colon', 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'],
    ['a content-length that is not a number', 'POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
    ['a method Node does not know', 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['headers over Node’s limit', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
  ])('%s: 400 invalid_body', async (_name, request) => {
    expectRawProblem(await raw(request), 400, 'invalid_body');
  });

  it('an HTTP/1.1 request without Host: 400 invalid_body naming host, not a bare 400', async () => {
    const response = await raw('GET /health HTTP/1.1\r\n\r\n');
    expectRawProblem(response, 400, 'invalid_body');
    expect(response).toContain('"detail":"host: is required"');
  });

  it('any method Node parses on a served path is 405 with allow; on another path 404', async () => {
    for (const [method, url, allow] of [
      ['PROPFIND', '/health', 'GET'],
      ['PURGE', '/v1/embeddings', 'POST'],
      ['MKCOL', '/v1/models', 'GET'],
    ] as const) {
      const res = await embedder.app.inject({ method: method as 'GET', url });
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
    }
    const res = await embedder.app.inject({ method: 'PROPFIND' as 'GET', url: '/nowhere' });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
  });

  it('a URL that cannot be decoded is 400 invalid_body with an x-request-id', async () => {
    const res = await embedder.app.inject({ method: 'GET', url: '/%' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_body');
    expect(res.headers['x-request-id']).toMatch(UUID);
  });
});

describe('probes in the log', () => {
  it('successful /ready, /health and /metrics probes leave no line; other requests and failed probes do', async () => {
    const before = logs.text().length;
    for (let i = 0; i < 5; i++) {
      expect((await embedder.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
      expect((await embedder.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
      await scrapeMetrics(embedder.app);
    }
    expect(logs.text().slice(before)).toBe('');
    await embedder.app.inject({ method: 'GET', url: '/nowhere' });
    draining = true;
    expect((await embedder.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(503);
    draining = false;
    const lines = logs
      .text()
      .slice(before)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((l) => [l.route, l.status])).toEqual([
      ['unmatched', 404],
      ['/ready', 503],
    ]);
  });
});
