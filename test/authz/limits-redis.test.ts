import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAdmission, evaluateCheck, refundTokens, type Tat } from '../../authz/src/policy/limits.js';
import { PERIOD_MS } from '../../contract/rate-period.js';
import type { RedisStore } from '../../authz/src/store/redis.js';
import type { SettlementStore } from '../../embedder/src/settlement/store.js';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL } from '../support/grpc-authz.js';
import { issueGrant, testClaims, testSettlementStore } from '../support/settlement.js';
import { connectedStore, testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
let store: RedisStore;
let settlement: SettlementStore;

beforeAll(async () => {
  store = await connectedStore();
  settlement = await testSettlementStore(store.connection.keys.prefix);
});

afterAll(async () => {
  settlement.close();
  await store.purge();
  await store.close();
});

// A small deterministic generator, so a failure replays the same sequence.
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

// authz's check and the embedder's admit and refund (contract/redis/settlement.lua) share the
// token buckets: all must run policy/limits.ts's arithmetic exactly.
describe('the settlement functions (check, admit, refund)', () => {
  it.each([
    [7, 50],
    [60, 1000],
    [1000, 7],
  ])('compute what policy/limits.ts computes (rpm %i, tpm %i)', async (rpm, tpm) => {
    const org = `mirror-${rpm}-${tpm}`;
    await addOrg(store, org, { tpm });
    const random = lcg(rpm * 31 + tpm);
    let requests: Tat | null = null;
    let tokens: Tat | null = null;
    let t = NOW;
    for (let step = 0; step < 150; step += 1) {
      t += Math.floor(random() * 3000);
      const expected = evaluateCheck(requests, tokens, t, { rpm, tpm });
      const draft = { ...testClaims({ org, model: TEST_MODEL, tpm }), grantedModel: TEST_MODEL };
      const actual = await store.checkLimits(draft, TEST_MODEL, t, { rpm, tpm });
      expect(actual, `step ${step}`).toEqual(expected.outcome);
      if (expected.outcome.allowed) requests = expected.requestsTat;
      if (random() < 0.4) {
        const cost = Math.floor(random() * tpm * 0.6);
        const admitted = evaluateAdmission(tokens, t, tpm, cost);
        const grant = testClaims({ org, model: TEST_MODEL, tpm });
        await issueGrant(store.connection.keys.prefix, grant);
        const reply = await settlement.admit(grant, TEST_MODEL, cost, t);
        const expected =
          admitted.outcome === 'too_large'
            ? { kind: 'too_large' }
            : { kind: admitted.outcome, tokensRemaining: admitted.tokensRemaining, retryAfterMs: admitted.retryAfterMs };
        expect(reply, `admit at step ${step}`).toMatchObject(expected);
        if (admitted.outcome === 'admitted') tokens = admitted.tat;
        if (admitted.outcome === 'admitted' && random() < 0.3) {
          tokens = refundTokens(tokens, t, tpm, cost);
          await settlement.refund(grant, TEST_MODEL, t);
        }
      }
    }
  });
});

describe('rate limit under concurrency', () => {
  it('allows exactly 50 of 200 simultaneous checks split over two authz instances sharing Redis', async () => {
    const prefix = testPrefix();
    const config = testConfig(prefix, { redisTimeoutMs: 5000 });
    // Both replicas read the same fixed clock: exactness must not depend on the test's speed.
    const clock = () => NOW;
    const [a, b] = await Promise.all([startAuthz(config, { clock }), startAuthz(config, { clock })]);
    try {
      await addOrg(a.store, 'busy', { rpm: 50 });
      const { key } = await addKey(a.store, 'busy');
      const request = envoyCheck({ authorization: `Bearer ${key}` });
      const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).check(request)));
      const allowed = responses.filter((r) => r.http_response === 'ok_response');
      const limited = responses.filter((r) => JSON.parse(r.denied_response?.body || '{}').code === 'rate_limit_exceeded');
      expect(allowed).toHaveLength(50);
      expect(limited).toHaveLength(150);
      expect(PERIOD_MS).toBe(60_000);
    } finally {
      await a.store.purge();
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
