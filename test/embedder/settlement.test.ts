/**
 * The embedder serves only what authz granted and settles every request on the real Redis
 * (contract/redis/settlement.lua): the grant verified before the body is read; tokens admitted
 * before any model work; a 200 leaves only with its usage recorded, once; a request answered
 * anything else never has a usage record, even when Redis stalls and applies a command late.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageReports } from '../../admin/src/store/reports.js';
import { GRANT_HEADER } from '../../contract/headers.js';
import { catalogue } from '../../openapi/problems.js';
import { addKey, addOrg } from '../authz/fixtures.js';
import {
  testGrant,
  TEST_MODEL_ID,
  ensureTestModel,
  metricValue,
  scrapeMetrics,
  startTestEmbedder,
  type TestEmbedder,
} from '../support/embedder-app.js';
import { type RedisProxy, startRedisProxy } from '../support/redis-proxy.js';
import type { SettlementStore } from '../../embedder/src/settlement/store.js';
import { grantHeader, testClaims, testSettlementKeys, TEST_GRANT_SECRET } from '../support/settlement.js';
import { signGrant } from '../../contract/grant.js';

let embedder: TestEmbedder;

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel());
});
afterAll(async () => embedder?.close());

/** An organization and key; `grant(extra)` signs a fresh grant for it with `tpm`. */
async function orgGrant(name: string, tpm: number): Promise<{ keyId: string; grant: () => Record<string, string> }> {
  await addOrg(embedder.authz.store, name, { tpm });
  const key = await addKey(embedder.authz.store, name);
  return { keyId: key.id, grant: () => testGrant({ org: name, key: key.id, tpm }) };
}

const post = (app: TestEmbedder, headers: Record<string, string>, input: string | string[] | unknown) =>
  app.app.inject({ method: 'POST', url: '/v1/embeddings', headers, payload: { model: TEST_MODEL_ID, input } as object });

async function usage(app: TestEmbedder, org: string) {
  const entries = [];
  for await (const entry of new UsageReports(app.authz.store.connection).readUsage({ org })) entries.push(entry);
  return entries;
}

async function modelCalls(): Promise<number> {
  return metricValue(await scrapeMetrics(embedder.app), 'embedder_batch_size_count', {}) ?? 0;
}

describe('settlement', () => {
  it('a 200 carries the token headers after this request, and exactly one usage record', async () => {
    const org = await orgGrant('ok-org', 10_000);
    const res = await post(embedder, { ...org.grant(), 'x-request-id': 'adm-1' }, ['heart attack', 'stroke']);
    expect(res.statusCode).toBe(200);
    const tokens = res.json().usage.total_tokens;
    expect(res.headers['x-ratelimit-limit-tokens']).toBe('10000');
    expect(res.headers['x-ratelimit-remaining-tokens']).toBe(String(10_000 - tokens));
    const records = await usage(embedder, 'ok-org');
    expect(records.map((r) => [r.requestId, r.tokens, r.keyId])).toEqual([['adm-1', tokens, org.keyId]]);
  });

  it("over the grant's tokens-per-minute budget: 429 with retry-after within the minute, before any model work", async () => {
    const org = await orgGrant('tight-org', 30);
    expect((await post(embedder, org.grant(), 'a a a a a a a a a a a a a a a a a a')).statusCode).toBe(200);
    const calls = await modelCalls();
    expect(calls).toBeGreaterThan(0);
    const refused = await post(embedder, org.grant(), 'a a a a a a a a a a a a a a a a a a');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'rate_limit_exceeded', status: 429 });
    expect(refused.json().detail).toMatch(/tokens-per-minute limit \(30\)/);
    const wait = Number(refused.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.headers['x-ratelimit-limit-tokens']).toBe('30');
    expect(await modelCalls()).toBe(calls);
    expect(await usage(embedder, 'tight-org')).toHaveLength(1);
  });

  it('a request larger than the whole budget is told so, with no retry-after it could never meet', async () => {
    const org = await orgGrant('small-org', 10);
    const res = await post(embedder, org.grant(), 'a a a a a a a a a a a a a a a a a a a a');
    expect(res.statusCode).toBe(catalogue.get('invalid_request')!.status);
    expect(res.json().detail).toMatch(/more than the organization's whole tokens-per-minute limit \(10\)/);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(await usage(embedder, 'small-org')).toHaveLength(0);
  });

  it('a grant admits one request: the same request again, or other inputs of the same size, serve nothing', async () => {
    const org = await orgGrant('retried-org', 10_000);
    const headers = org.grant();
    const calls = await modelCalls();
    expect((await post(embedder, headers, 'first attempt')).statusCode).toBe(200);
    const served = await modelCalls();
    expect(served).toBeGreaterThan(calls);
    for (const text of ['first attempt', 'other attempt', 'a much longer request riding on a captured grant']) {
      const replay = await post(embedder, headers, text);
      expect(replay.statusCode).toBe(503);
      expect(replay.json().code).toBe('authorization_unavailable');
    }
    expect(await modelCalls()).toBe(served);
    expect(await usage(embedder, 'retried-org')).toHaveLength(1);
  });
});

describe('the grant: nothing is served that authz did not sign', () => {
  const forged = { 'x-gateway-org-id': 'victim-org', 'x-gateway-key-id': 'VICTIMKEYAAA', 'x-gateway-model': TEST_MODEL_ID };

  it.each([
    ['no grant, forged identity headers', forged],
    [
      'a grant signed with another secret',
      { ...forged, ...grantHeader({ org: 'victim-org' }, 'an-attackers-own-secret-0123456789abcdef') },
    ],
    ['an altered grant', { [GRANT_HEADER]: grantHeader({ org: 'victim-org' })[GRANT_HEADER]!.replace(/\.([^.]*)\./, '.eyJvcmciOiJ4In0.') }],
    ['not a grant', { [GRANT_HEADER]: 'v1.e30.AAAA' }],
  ])('%s: 401 before the body is read, nothing embedded or billed', async (_name, headers) => {
    const calls = await modelCalls();
    // An unparsable body: a 401 (not a 400) shows the body was never looked at.
    const res = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_api_key');
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(await modelCalls()).toBe(calls);
    expect(await usage(embedder, 'victim-org')).toHaveLength(0);
  });

  it('an expired grant is 503 authorization_unavailable (the gateway decides again on a retry)', async () => {
    const res = await post(embedder, grantHeader({ exp: Date.now() - 60_000 }), 'x');
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('authorization_unavailable');
  });

  it('a grant without the model (the organization may not use it) is 403 model_not_enabled', async () => {
    const res = await post(embedder, testGrant({ model: '' }), 'x');
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('model_not_enabled');
  });

  it('a valid grant serves only its own organization: the identity headers beside it are ignored', async () => {
    const org = await orgGrant('real-org', 10_000);
    const res = await post(
      embedder,
      { ...org.grant(), 'x-gateway-org-id': 'victim-org', 'x-gateway-key-id': 'VICTIMKEYAAA' },
      'billed to the grant',
    );
    expect(res.statusCode).toBe(200);
    expect(await usage(embedder, 'victim-org')).toHaveLength(0);
    expect(await usage(embedder, 'real-org')).toHaveLength(1);
  });
});

/**
 * One request for `org` on an embedder that reaches Redis through a proxy, its store's record
 * wrapped by `record` (which may pause the proxy); expects 503 authorization_unavailable and, once
 * the held commands have reached Redis, no usage record. Returns the grant's final state.
 */
async function settledWhileStalled(
  org: string,
  record: (store: SettlementStore, proxy: RedisProxy) => SettlementStore['record'],
): Promise<string | null> {
  const proxy = await startRedisProxy();
  const stalled = await startTestEmbedder(ensureTestModel(), {
    env: { REDIS_URL: proxy.url, SETTLEMENT_TIMEOUT_MS: '300' },
    wrapSettlement: (store) => ({ ...store, record: record(store, proxy) }),
  });
  try {
    await addOrg(stalled.authz.store, org, { tpm: 1_000 });
    const claims = testClaims({ org, tpm: 1_000 });
    const res = await post(stalled, { [GRANT_HEADER]: signGrant(claims, TEST_GRANT_SECRET) }, 'stalled');
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('authorization_unavailable');
    // The held commands reach Redis now, late.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await usage(stalled, org)).toHaveLength(0);
    const keys = await testSettlementKeys(stalled.authz.store.connection.keys.prefix);
    return await stalled.authz.store.connection.redis.hget(keys.grant(claims.org, claims.uid), 'state');
  } finally {
    await stalled.close();
    await proxy.stop();
  }
}

describe('exactly once when Redis stalls', () => {
  it('a record held up past its deadline and applied late writes nothing: 503, no usage record, tokens refunded', async () => {
    // Redis stops (as with SIGSTOP) just as the record is sent, and comes back after the wait:
    // the record, then the refund, reach it late.
    const state = await settledWhileStalled('stalled-org', (store, proxy) => (...args) => {
      proxy.pause();
      setTimeout(() => proxy.resume(), 1_500);
      return store.record(...args);
    });
    expect(state).toMatch(/^r:\d+$/);
  });

  it('a record that landed but whose reply was lost, with Redis then stalled past the wait: 503, and the refund voids the record', async () => {
    // The record is written; then Redis stops (its reply, as it were, lost on the way) and comes
    // back after the wait: the embedder cannot tell, so it answers 503 and refunds (a second
    // record, the status read and the refund reach Redis late).
    let first = true;
    const state = await settledWhileStalled('lost-reply-org', (store, proxy) => async (...args) => {
      if (!first) return store.record(...args);
      first = false;
      await store.record(...args);
      proxy.pause();
      setTimeout(() => proxy.resume(), 1_500);
      throw new Error('the reply was lost');
    });
    expect(state).toMatch(/^v:\d+$/);
  });

  it('with Redis unreachable the request fails closed: 503 authorization_unavailable with retry-after, nothing embedded', async () => {
    const proxy = await startRedisProxy();
    const down = await startTestEmbedder(ensureTestModel(), { env: { REDIS_URL: proxy.url, SETTLEMENT_TIMEOUT_MS: '300' } });
    try {
      await proxy.stop();
      const res = await post(down, testGrant(), 'x');
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('authorization_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const ready = await down.app.inject({ method: 'GET', url: '/ready' });
      expect(ready.statusCode).toBe(503);
    } finally {
      await down.close();
    }
  });
});
