/**
 * The embedder settles every request with a real authz (in-process gRPC on Redis): tokens are
 * admitted before any model work, a 200 leaves only with its usage recorded, refusals carry the
 * token rate-limit headers, and an authz that cannot answer fails the request closed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageReports } from '../../authz/src/store/reports.js';
import { catalogue } from '../../openapi/problems.js';
import { addKey, addOrg } from '../authz/fixtures.js';
import { TEST_GRANT, TEST_MODEL_ID, ensureTestModel, metricValue, scrapeMetrics, startTestEmbedder, type TestEmbedder } from '../support/embedder-app.js';

let embedder: TestEmbedder;

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel());
});
afterAll(async () => embedder?.close());

/** An organization with `tpm` and a key, as authz's identity headers. */
async function orgHeaders(name: string, tpm: number): Promise<Record<string, string>> {
  await addOrg(embedder.authz.store, name, { tpm });
  const key = await addKey(embedder.authz.store, name);
  return { ...TEST_GRANT, 'x-gateway-org-id': name, 'x-gateway-key-id': key.id };
}

const post = (headers: Record<string, string>, input: string | string[]) =>
  embedder.app.inject({ method: 'POST', url: '/v1/embeddings', headers, payload: { model: TEST_MODEL_ID, input } });

async function usage(org: string) {
  const entries = [];
  for await (const entry of new UsageReports(embedder.authz.store.connection).readUsage({ org })) entries.push(entry);
  return entries;
}

async function modelCalls(): Promise<number> {
  return metricValue(await scrapeMetrics(embedder.app), 'embedder_batch_size_count', {}) ?? 0;
}

describe('admission', () => {
  it('a 200 carries the token headers after this request, and exactly one usage record', async () => {
    const headers = await orgHeaders('ok-org', 10_000);
    const res = await post({ ...headers, 'x-request-id': 'adm-1' }, ['heart attack', 'stroke']);
    expect(res.statusCode).toBe(200);
    const tokens = res.json().usage.total_tokens;
    expect(res.headers['x-ratelimit-limit-tokens']).toBe('10000');
    expect(res.headers['x-ratelimit-remaining-tokens']).toBe(String(10_000 - tokens));
    const records = await usage('ok-org');
    expect(records.map((r) => [r.requestId, r.tokens, r.keyId])).toEqual([['adm-1', tokens, headers['x-gateway-key-id']]]);
  });

  it('over the tokens-per-minute budget: 429 with retry-after within the minute, before any model work', async () => {
    const headers = await orgHeaders('tight-org', 30);
    expect((await post(headers, 'a a a a a a a a a a a a a a a a a a')).statusCode).toBe(200);
    const calls = await modelCalls();
    expect(calls).toBeGreaterThan(0);
    const refused = await post(headers, 'a a a a a a a a a a a a a a a a a a');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'rate_limit_exceeded', status: 429 });
    expect(refused.json().detail).toMatch(/tokens-per-minute limit \(30\)/);
    const wait = Number(refused.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.headers['x-ratelimit-limit-tokens']).toBe('30');
    expect(await modelCalls()).toBe(calls);
    expect(await usage('tight-org')).toHaveLength(1);
  });

  it('a request larger than the whole budget is told so, with no retry-after it could never meet', async () => {
    const headers = await orgHeaders('small-org', 10);
    const res = await post(headers, 'a a a a a a a a a a a a a a a a a a a a');
    expect(res.statusCode).toBe(catalogue.get('invalid_request')!.status);
    expect(res.json().detail).toMatch(/more than the organization's whole tokens-per-minute limit \(10\)/);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(await usage('small-org')).toHaveLength(0);
  });

  it('a request Envoy retried on this replica (same x-gateway-request-uid) is recorded once', async () => {
    const headers = { ...(await orgHeaders('retried-org', 10_000)), 'x-gateway-request-uid': '0b8f5c1e-2d3a-4f6b-9c7d-1e2f3a4b5c6d' };
    expect((await post(headers, 'first attempt')).statusCode).toBe(200);
    expect((await post(headers, 'first attempt')).statusCode).toBe(200);
    expect(await usage('retried-org')).toHaveLength(1);
  });

  it('a request that did not pass authz (no identity headers) is refused', async () => {
    const res = await post({ 'x-gateway-model': TEST_MODEL_ID }, 'x');
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('model_not_enabled');
  });
});

describe('admission with authz down', () => {
  it('fails closed: 503 authorization_unavailable with retry-after, nothing embedded', async () => {
    const down = await startTestEmbedder(ensureTestModel(), { env: { ADMISSION_TIMEOUT_MS: '300', ADMISSION_RECORD_ATTEMPTS: '1' } });
    try {
      await down.authz.stop();
      const res = await down.app.inject({ method: 'POST', url: '/v1/embeddings', headers: TEST_GRANT, payload: { model: TEST_MODEL_ID, input: 'x' } });
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('authorization_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      await down.app.close();
      await down.engine.close();
    }
  });
});
