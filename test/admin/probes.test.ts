/**
 * The admin listener's probes, which the Kubernetes manifests use (deploy/kubernetes/base/admin.yaml):
 * GET /health answers while the process serves, Redis or not (liveness must not restart a pod
 * that only lost Redis); GET /ready answers 200 only while Redis answers, else the catalogue's
 * 503 store_unavailable with retry-after. Neither needs a credential, and neither says more.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { openAdminDeps } from '../../admin/src/operations/deps.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const config = { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET };
const open = {
  ...config,
  auditSecret: 'admin-probe-tests-audit-secret-0123456789ab',
  auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'admin-probes-')), 'anchor.jsonl'),
  redisKeyPrefix: testPrefix(),
  redisTimeoutMs: 200,
};
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

/** An admin app on `redisUrl`, with its Redis connected when `connect`. */
async function appOn(redisUrl: string, connect: boolean): Promise<FastifyInstance> {
  const { deps, connection } = openAdminDeps({ ...open, redisUrl });
  if (connect) await connection.ready();
  const app = buildAdminServer({
    ops: createOperations(deps),
    config,
    stores: deps,
    sessionLifetimes: { idleMs: 60_000, maxMs: 600_000 },
    trustedProxies: [],
    oidc: null,
    logLevel: 'silent',
  });
  closers.push(
    () => app.close(),
    () => connection.close(),
  );
  return app;
}

describe('the admin listener’s probes', () => {
  it('with Redis: /health and /ready are 200, uncached, without a credential', async () => {
    const app = await appOn(TEST_REDIS_URL, true);
    for (const [url, status] of [
      ['/health', 'ok'],
      ['/ready', 'ready'],
    ] as const) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expect(response.json()).toEqual({ status });
      expect(response.headers['cache-control']).toBe('no-store');
    }
  });

  it('without Redis: /health stays 200 (no restart), /ready is 503 store_unavailable with retry-after', async () => {
    const app = await appOn('redis://127.0.0.1:1', false);
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    const ready = await app.inject({ method: 'GET', url: '/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(ready.json()).toMatchObject({ status: 503, code: 'store_unavailable' });
    expect(ready.headers['retry-after']).toBe('1');
  });

  it('only GET: another method is the catalogue’s problem, not a probe answer', async () => {
    const app = await appOn(TEST_REDIS_URL, true);
    const response = await app.inject({ method: 'POST', url: '/ready' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'not_found' });
  });
});
