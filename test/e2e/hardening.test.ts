/**
 * Issue 9 through the real Envoy, as a hostile client would try it: bodies that parsers read
 * differently never reach a model the organization may not use, a request without a valid key
 * is refused on its headers before its body is read, and every edge of HTTP gets a problem body
 * with an x-request-id. Runs on the generated test model: nothing here depends on vectors.
 */
import { connect as http2Connect, constants as h2 } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { expectProblemBody } from '../support/problem-assert.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import type { GatewayResponse } from '../support/stack-client.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let stack: Stack;
let allowed: CreatedKey;
let noModel: CreatedKey;

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  allowed = orgWithKey(stack, 'hard-ok');
  noModel = orgWithKey(stack, 'hard-nomodel', { models: [] });
});

afterAll(async () => {
  await stack?.stop();
});

function post(key: CreatedKey | undefined, body: string | Buffer, headers: Record<string, string> = {}, http2 = false) {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    http2,
    body,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key.key}` } : {}), ...headers },
  });
}

function expectProblem(res: GatewayResponse, code: string, detail?: RegExp): void {
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  const body = res.json();
  expectProblemBody(body, code as never);
  expect(res.status).toBe(body.status);
  expect(res.headers['x-request-id']).toBeTruthy();
  if (detail) expect(body.detail).toMatch(detail);
}

const model = () => stack.svc.modelId;
const BYPASS_BODIES: ReadonlyArray<[string, () => string | Buffer]> = [
  ['a lone surrogate escape', () => `{"model":"${model()}","input":"x\\ud800y"}`],
  ['an invalid UTF-8 byte', () => Buffer.concat([Buffer.from(`{"model":"${model()}","input":"x`), Buffer.from([0xff]), Buffer.from('"}')])],
  ['1,000-deep nesting in an ignored field', () => `{"model":"${model()}","input":"x","extra":${'['.repeat(1000)}${']'.repeat(1000)}}`],
];

describe('no request uses a model its organization may not use', () => {
  it.each(BYPASS_BODIES)(
    '%s: refused for an organization without the model, and for one with it (400 naming body)',
    async (_name, body) => {
      for (const key of [noModel, allowed]) {
        const res = await post(key, body());
        expect(res.status, key.org).not.toBe(200);
        expectProblem(res, 'invalid_body', /^body: /);
      }
    },
  );

  it('a well-formed body from an organization without the model is 403 model_not_enabled, forged grants or not', async () => {
    const body = JSON.stringify({ model: model(), input: 'x' });
    expectProblem(await post(noModel, body), 'model_not_enabled');
    const forged = { 'x-gateway-model': model(), 'x-gateway-org-id': allowed.org, 'x-gateway-key-id': allowed.id };
    expectProblem(await post(noModel, body, forged), 'model_not_enabled');
    expectProblem(await post(noModel, body, forged, true), 'model_not_enabled');
    expect((await post(allowed, body)).status).toBe(200);
  });

  it.each([5, true, { id: 'x' }, ['x'], null])('model %j of the wrong type is 400 invalid_body naming model, not 403', async (value) => {
    for (const key of [noModel, allowed]) {
      expectProblem(await post(key, JSON.stringify({ model: value, input: 'x' })), 'invalid_body', /^model/);
    }
  });
});

describe('nothing anonymous is expensive', () => {
  it.each([false, true])('a request without a valid key is refused on its headers while its body is unsent (http2: %s)', async (http2) => {
    // Declares 1 MiB, sends 10 bytes and waits: the refusal must come without the rest.
    const res = await unfinishedUpload(http2, { authorization: `Bearer CTG_${'A'.repeat(12)}_${'B'.repeat(38)}` });
    expect(res.status).toBe(401);
    expect(res.contentType).toBe(PROBLEM_CONTENT_TYPE);
  });

  it('the same unfinished upload with a valid key is held for its body (so the refusal above was not a timeout)', async () => {
    const res = await unfinishedUpload(false, { authorization: `Bearer ${allowed.key}` }, 1_500);
    expect(res.status).toBe(0);
  });
});

describe('every edge of HTTP gets a problem body', () => {
  it('x-request-id: one rule on every path, before authentication, so a bad id spends no rate limit', async () => {
    const body = JSON.stringify({ model: model(), input: 'x' });
    const before = await post(allowed, body);
    const remaining = Number(before.headers['x-ratelimit-remaining']);
    for (const bad of ['x'.repeat(201), 'has space', 'quote"d', 'new\tline']) {
      for (const path of ['/health', '/nowhere', '/v1/embeddings']) {
        const res = await stack.request({
          method: path === '/v1/embeddings' ? 'POST' : 'GET',
          path,
          headers: { 'x-request-id': bad, 'content-type': 'application/json', authorization: `Bearer ${allowed.key}` },
          body: path === '/v1/embeddings' ? body : undefined,
        });
        expectProblem(res, 'invalid_body', /^x-request-id: /);
        // A fresh id: the bad one is never echoed (nor logged).
        expect(res.headers['x-request-id']).toMatch(UUID);
      }
    }
    // An empty id counts as absent (contract/request-id.ts): a fresh UUID, no refusal.
    const empty = await stack.request({ method: 'GET', path: '/health', headers: { 'x-request-id': '' } });
    expect(empty.status).toBe(200);
    expect(empty.headers['x-request-id']).toMatch(UUID);
    const after = await post(allowed, body, { 'x-request-id': 'x'.repeat(200) });
    expect(after.status).toBe(200);
    expect(after.headers['x-request-id']).toBe('x'.repeat(200));
    // Only the two accepted requests were counted (the window refills slowly at the default rpm).
    expect(Number(after.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(remaining - 1);
  });

  it.each([70, 100])('%d request headers: 400 invalid_body before authentication, never a 500', async (count) => {
    const extra = Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-filler-${i}`, 'v']));
    for (const http2 of [false, true]) {
      const res = await post(allowed, JSON.stringify({ model: model(), input: 'x' }), extra, http2);
      expectProblem(res, 'invalid_body');
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('an oversized header block over HTTP/2 gets a problem body, not a bare reset', async () => {
    const res = await post(allowed, '{}', { 'x-big': 'v'.repeat(40_000) }, true);
    expectProblem(res, 'invalid_body');
  });

  it('/v1%2fembeddings is a 400 problem with an x-request-id, not a bodiless redirect', async () => {
    const res = await stack.request({
      method: 'POST',
      path: '/v1%2fembeddings',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expectProblem(res, 'invalid_body');
  });

  it('HTTP/1.0 is served', async () => {
    const raw = await rawHttp1('GET /health HTTP/1.0\r\n\r\n');
    expect(raw).toMatch(/^HTTP\/1\.[01] 200 /);
    expect(raw).toContain('{"status":"ok"}');
  });

  it('Transfer-Encoding: gzip, chunked is a 400 problem, not a text/plain 501', async () => {
    const raw = await rawHttp1(
      `POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${allowed.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
    );
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw.toLowerCase()).toContain(`content-type: ${PROBLEM_CONTENT_TYPE}`);
    expect(raw.toLowerCase()).toMatch(/x-request-id: \S+/);
  });

  it('listens on IPv6 too: https://[::1]/health', async () => {
    const raw = await rawHttp1('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', '::1');
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
  });
});

/** Writes `text` on a fresh TLS connection and returns everything read until it closes. */
function rawHttp1(text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host, port: stack.ports.gateway, servername: 'localhost', ca: stack.ca, ALPNProtocols: ['http/1.1'] }, () =>
      socket.write(text),
    );
    let out = '';
    socket.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no close within 10 s; read so far: ${out.slice(0, 200)}`)));
  });
}

/** Starts a 1 MiB POST, sends 10 bytes, waits `waitMs`; status 0 means no response came. */
function unfinishedUpload(
  http2: boolean,
  headers: Record<string, string>,
  waitMs = 5_000,
): Promise<{ status: number; contentType?: string }> {
  const head = { 'content-type': 'application/json', 'content-length': String(1_048_576), ...headers };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish({ status: 0 }), waitMs);
    let finish: (r: { status: number; contentType?: string }) => void;
    if (http2) {
      const session = http2Connect(`https://127.0.0.1:${stack.ports.gateway}`, { ca: stack.ca, servername: 'localhost' });
      session.on('error', () => undefined);
      const stream = session.request({ [h2.HTTP2_HEADER_METHOD]: 'POST', [h2.HTTP2_HEADER_PATH]: '/v1/embeddings', ...head });
      stream.on('error', () => undefined);
      finish = (r) => {
        clearTimeout(timer);
        session.destroy();
        resolve(r);
      };
      stream.on('response', (h) => finish({ status: Number(h[h2.HTTP2_HEADER_STATUS]), contentType: String(h['content-type']) }));
      stream.write('{"model":"');
    } else {
      const lines = Object.entries(head)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n');
      const socket = tlsConnect(
        { host: '127.0.0.1', port: stack.ports.gateway, servername: 'localhost', ca: stack.ca, ALPNProtocols: ['http/1.1'] },
        () => {
          socket.write(`POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\n${lines}\r\n\r\n{"model":"`);
        },
      );
      finish = (r) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(r);
      };
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
        const type = /content-type: ([^\r\n]+)/i.exec(text);
        if (status && text.includes('\r\n\r\n')) finish({ status: Number(status[1]), ...(type ? { contentType: type[1] } : {}) });
      });
      socket.on('error', reject);
    }
  });
}
