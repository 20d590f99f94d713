/**
 * Availability errors through the real Envoy: the embedder stopped, authz stopped, and authz
 * without Redis each give 503 with retry-after and the catalogue's code; /health stays 200
 * throughout; and the gateway recovers when the part comes back.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_CONTENT_TYPE, PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { expectProblemBody } from '../support/problem-assert.js';
import { freePort, waitFor } from '../support/process.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { startStack, type Stack } from '../support/stack.js';
import type { GatewayResponse } from '../support/stack-client.js';

let stack: Stack;
let key: CreatedKey;

beforeAll(async () => {
  stack = await startStack();
  key = orgWithKey(stack, 'avail');
});

afterAll(async () => {
  await stack?.stop();
});

const embed = (http2 = false) =>
  stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    http2,
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'x-request-id': 'avail-1' },
    body: JSON.stringify({ model: stack.svc.modelId, input: 'Discharged home in stable condition.' }),
  });

function expect503(res: GatewayResponse, code: 'upstream_unavailable' | 'authorization_unavailable') {
  expect(res.status, res.body).toBe(503);
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  expectProblemBody(res.json(), code);
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(res.headers['x-request-id']).toBe('avail-1');
}

async function expectHealthy() {
  const res = await stack.request({ path: '/health' });
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
  expect(res.json()).toEqual({ status: 'ok' });
}

describe('503 with retry-after', () => {
  it('embedder stopped: upstream_unavailable; /health stays 200; back to 200 when it returns', async () => {
    expect((await embed()).status).toBe(200);
    await stack.stopService('embedder');
    for (const http2 of [false, true]) expect503(await embed(http2), 'upstream_unavailable');
    await expectHealthy();
    await stack.startService('embedder');
    expect((await embed()).status).toBe(200);
  }, 180_000);

  it('authz stopped: authorization_unavailable (fail closed); /health stays 200; back when it returns', async () => {
    await stack.stopService('authz');
    for (const http2 of [false, true]) expect503(await embed(http2), 'authorization_unavailable');
    await expectHealthy();
    await stack.startService('authz');
    // Envoy reconnects to authz on the next check.
    await waitFor('authz to answer through Envoy', async () => (await embed()).status === 200, 15_000);
  }, 60_000);

  it("the embedder's own 503 overloaded passes through Envoy unchanged, retry-after included", async () => {
    // A queue of one input: a 1,000-input request fills it for seconds, so the next one is refused.
    await stack.startService('embedder', { QUEUE_MAX_INPUTS: '1' });
    try {
      const big = stack.request({
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: stack.svc.modelId, input: Array.from({ length: 1000 }, (_, i) => `note ${i}`) }),
      });
      // Wait until the big request is queued (tokenizing 1,000 inputs takes a while on a busy machine).
      await waitFor(
        'the big request to be queued',
        async () => {
          const token = readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim();
          const metrics = await (
            await fetch(`http://127.0.0.1:${stack.ports.embedder}/metrics`, { headers: { authorization: `Bearer ${token}` } })
          ).text();
          return Number(/^embedder_queue_inputs (\d+)/m.exec(metrics)?.[1] ?? 0) > 0;
        },
        60_000,
      );
      const refused = await embed();
      expect(refused.status, refused.body).toBe(503);
      expect(refused.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
      expectProblemBody(refused.json(), 'overloaded');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await big).status).toBe(200);
    } finally {
      await stack.startService('embedder');
    }
  }, 180_000);

  it('authz without Redis: authorization_unavailable within the ext_authz timeout', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    await stack.startService('authz', { REDIS_URL: deadRedis });
    try {
      expect503(await embed(), 'authorization_unavailable');
    } finally {
      await stack.startService('authz');
    }
    await waitFor('authz with Redis to answer through Envoy', async () => (await embed()).status === 200, 15_000);
  }, 60_000);
});
