/**
 * Envoy alone, over real TLS, with nothing listening behind it: the replies Envoy makes itself
 * must already be the catalogue's problem bodies, with x-request-id on every one.
 */
import { readFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_CONTENT_TYPE, PROBLEM_CONTENT_TYPE, type problem } from '../../openapi/problems.js';
import { expectProblemBody } from '../support/problem-assert.js';
import type { ManagedProcess } from '../support/process.js';
import { makeStackDir, pickPorts, removeStackDir, startEnvoy, type StackPorts } from '../support/stack.js';
import { gatewayRequest, type GatewayRequest } from '../support/stack-client.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MIB = 1024 * 1024;
const dirs = makeStackDir();
const ca = readFileSync(dirs.caFile);
let ports: StackPorts;
let envoy: ManagedProcess;

const send = (req: GatewayRequest) => gatewayRequest({ host: 'localhost', port: ports.gateway, ca }, req);

beforeAll(async () => {
  ports = await pickPorts();
  envoy = await startEnvoy(dirs, ports);
});

afterAll(async () => {
  await envoy?.stop();
  removeStackDir(dirs);
});

function expectProblem(res: Awaited<ReturnType<typeof send>>, code: Parameters<typeof problem>[0]) {
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  const body = res.json();
  expectProblemBody(body, code);
  expect(res.status).toBe(body.status);
}

describe.each([false, true])('Envoy local replies (http2: %s)', (http2) => {
  it('GET /health is 200 {"status":"ok"} with the JSON content type, without a key or a model', async () => {
    const res = await send({ path: '/health', http2 });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(res.protocol).toBe(http2 ? 'h2' : 'http/1.1');
  });

  it.each(['POST', 'PUT', 'DELETE'])('%s /health is 405 method_not_allowed with allow: GET', async (method) => {
    const res = await send({ method, path: '/health', http2 });
    expectProblem(res, 'method_not_allowed');
    expect(res.headers.allow).toBe('GET');
  });

  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('%s /v1/embeddings is 405 with allow: POST', async (method) => {
    const res = await send({ method, path: '/v1/embeddings', http2 });
    expectProblem(res, 'method_not_allowed');
    expect(res.headers.allow).toBe('POST');
  });

  it.each(['POST', 'PUT', 'DELETE'])('%s /v1/models and /v1/models/{model} are 405 with allow: GET', async (method) => {
    for (const path of ['/v1/models', '/v1/models/some-model']) {
      const res = await send({ method, path, http2 });
      expectProblem(res, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET');
    }
  });

  it.each(['/', '/v1', '/v1/completions', '/v1/models/a/b', '/v1/embeddings/x', '/health/x', '/v2/embeddings'])(
    '%s is 404 not_found',
    async (path) => {
      const res = await send({ method: 'POST', path, http2, headers: { 'content-type': 'application/json' }, body: '{}' });
      expectProblem(res, 'not_found');
    },
  );

  it('normalizes the path first: //v1/./embeddings is the embeddings route', async () => {
    const res = await send({ method: 'GET', path: '//v1/./embeddings', http2 });
    expectProblem(res, 'method_not_allowed');
    expect(res.headers.allow).toBe('POST');
  });

  it('a body over 1 MiB with no decision on its key is refused on its headers, never buffered (fail closed: 503)', async () => {
    // The 413 itself needs an accepted key: test/e2e/embeddings.test.ts covers it.
    const res = await send({
      method: 'POST',
      path: '/v1/embeddings',
      http2,
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(MIB + 1, 0x61),
    });
    expectProblem(res, 'authorization_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('x-request-id is echoed when sent and a UUID when not, on local replies too', async () => {
    for (const path of ['/health', '/nope', '/v1/embeddings']) {
      const sent = await send({ path, http2, headers: { 'x-request-id': `client-chosen-${path}` } });
      expect(sent.headers['x-request-id']).toBe(`client-chosen-${path}`);
      const generated = await send({ path, http2 });
      expect(generated.headers['x-request-id']).toMatch(UUID);
    }
    // A UUID-shaped id comes back byte for byte (no trace-reason packing).
    const uuid = '3f2b8a6c-1d4e-4f5a-9b7c-2e1d0c9b8a7f';
    expect((await send({ path: '/health', http2, headers: { 'x-request-id': uuid } })).headers['x-request-id']).toBe(uuid);
  });
});

describe('Envoy without authz (fail closed)', () => {
  it('POST /v1/embeddings is 503 authorization_unavailable with retry-after and x-request-id', async () => {
    const res = await send({
      method: 'POST',
      path: '/v1/embeddings',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x', 'x-request-id': 'authz-down-1' },
      body: JSON.stringify({ model: 'm', input: 'hello' }),
    });
    expectProblem(res, 'authorization_unavailable');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['x-request-id']).toBe('authz-down-1');
  });
});

describe('a request Envoy cannot parse', () => {
  it('is 400 invalid_body with the problem body and a generated x-request-id', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect(
        { host: '127.0.0.1', port: ports.gateway, servername: 'localhost', ca, ALPNProtocols: ['http/1.1'] },
        () => {
          socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nthis is not a header\r\n\r\n');
        },
      );
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, body] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(new RegExp(`\r\ncontent-type: ${PROBLEM_CONTENT_TYPE.replace(/[+]/g, '\\+')}\r\n`, 'i'));
    expect(head).toMatch(/\r\nx-request-id: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\r\n/i);
    expectProblemBody(JSON.parse(body!), 'invalid_body');
  });
});

describe('TLS', () => {
  const handshake = (options: { minVersion?: 'TLSv1'; maxVersion?: 'TLSv1.1' | 'TLSv1.2'; ciphers?: string; ALPNProtocols?: string[] }) =>
    new Promise<{ protocol: string | null; alpn: string | false }>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: ports.gateway, servername: 'localhost', ca, ...options }, () => {
        resolve({ protocol: socket.getProtocol(), alpn: socket.alpnProtocol ?? false });
        socket.end();
      });
      socket.once('error', reject);
    });

  it('accepts TLS 1.2 and negotiates h2 or http/1.1 by ALPN', async () => {
    expect(await handshake({ maxVersion: 'TLSv1.2', ALPNProtocols: ['h2'] })).toEqual({ protocol: 'TLSv1.2', alpn: 'h2' });
    expect((await handshake({ ALPNProtocols: ['http/1.1'] })).alpn).toBe('http/1.1');
  });

  it('refuses TLS 1.1 (the server answers with a protocol_version alert)', async () => {
    // SECLEVEL=0 lets this client offer TLS 1.1 at all, so the refusal is the server's.
    await expect(handshake({ minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' })).rejects.toThrow(
      /protocol version/i,
    );
  });

  it('presents a certificate for localhost signed by the local CA', async () => {
    // `ca` is the only trust anchor here, so a completed handshake proves the chain and name.
    await expect(handshake({})).resolves.toMatchObject({ protocol: expect.stringMatching(/^TLSv1\.[23]$/) });
  });
});
