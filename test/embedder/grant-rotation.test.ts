/**
 * The embedder during a rotation (deploy/README.md, "Rotating the internal secrets"): with two
 * grant secrets configured (one per line), a grant signed with either is served and settled; a
 * grant signed with a secret never issued is refused before any work; both metrics tokens are
 * answered. Real model, real Redis, the app as main.ts builds it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRANT_HEADER } from '../../contract/headers.js';
import { signGrant } from '../../contract/grant.js';
import { ensureTestModel, startTestEmbedder, TEST_MODEL_ID, type TestEmbedder } from '../support/embedder-app.js';
import { testClaims, TEST_GRANT_SECRET } from '../support/settlement.js';

const NEW_SECRET = `${TEST_GRANT_SECRET}-rotated`;
const OLD_METRICS = 'grant-rotation-test-metrics-token-old-0123456789';
const NEW_METRICS = 'grant-rotation-test-metrics-token-new-0123456789';
let embedder: TestEmbedder;

beforeAll(async () => {
  // Step 2 of a rotation: the new secret first (authz signs with it), the old one still accepted.
  embedder = await startTestEmbedder(ensureTestModel(), {
    env: { GRANT_SECRET: `${NEW_SECRET}\n${TEST_GRANT_SECRET}`, METRICS_TOKEN: `${NEW_METRICS}\n${OLD_METRICS}` },
  });
});
afterAll(async () => embedder?.close());

const post = (secret: string) =>
  embedder.app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    headers: { [GRANT_HEADER]: signGrant(testClaims(), secret) },
    payload: { model: TEST_MODEL_ID, input: 'rotation canary' },
  });

describe('the embedder with two grant secrets', () => {
  it('serves a grant signed with the new or the old secret, refuses one never issued with the problem body', async () => {
    expect((await post(NEW_SECRET)).statusCode).toBe(200);
    expect((await post(TEST_GRANT_SECRET)).statusCode).toBe(200);
    const forged = await post('a-grant-secret-nobody-was-given-0123456789');
    expect(forged.statusCode).toBe(401);
    expect(forged.json()).toMatchObject({ code: 'invalid_api_key' });
  });

  it('answers /metrics to either metrics token, 401 to another', async () => {
    const scrape = async (token: string) =>
      (await embedder.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } })).statusCode;
    expect([await scrape(NEW_METRICS), await scrape(OLD_METRICS), await scrape(`${OLD_METRICS}x`)]).toEqual([200, 200, 401]);
  });
});
