/**
 * Keys, access, rate limits and usage through the real Envoy: authz's denials arrive intact
 * (body, content type, www-authenticate, retry-after), the rate-limit headers appear exactly
 * on responses that reached the check, client-sent identity headers never count, and the
 * recorded usage equals the tokens returned.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_CONTENT_TYPE, type problem } from '../../openapi/problems.js';
import { expectProblemBody } from '../support/problem-assert.js';
import { createKey, createOrg, orgName, orgWithKey, revokeKey, usage, waitForUsage, type CreatedKey } from '../support/stack-admin.js';
import { waitFor } from '../support/process.js';
import { startStack, type Stack } from '../support/stack.js';
import type { GatewayResponse } from '../support/stack-client.js';
import { mistyped } from '../support/mistype.js';

let stack: Stack;
let key: CreatedKey;

beforeAll(async () => {
  stack = await startStack();
  key = orgWithKey(stack, 'access');
});

afterAll(async () => {
  await stack?.stop();
});

function post(authorization: string | undefined, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}), ...headers },
    body: JSON.stringify({ model: stack.svc.modelId, input: 'No known drug allergies.', ...body }),
  });
}

const bearer = (k: { key: string }) => `Bearer ${k.key}`;
const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/** The body authz sent, exactly as the catalogue builds it (nothing rewrote it on the way). */
function expectDenial(res: GatewayResponse, code: Parameters<typeof problem>[0]) {
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  const body = res.json();
  expectProblemBody(body, code);
  expect(res.status).toBe(body.status);
  expect(res.headers['x-request-id']).toBeTruthy();
}

describe('401', () => {
  it.each<[string, () => string | undefined, 'missing_api_key' | 'malformed_api_key' | 'invalid_api_key']>([
    ['no Authorization header', () => undefined, 'missing_api_key'],
    ['a non-Bearer scheme', () => `Basic ${Buffer.from('a:b').toString('base64')}`, 'malformed_api_key'],
    ['a key of the wrong shape', () => 'Bearer CTG_short', 'malformed_api_key'],
    ['a well-formed key nobody issued', () => `Bearer CTG_${'A'.repeat(12)}_${'B'.repeat(38)}`, 'invalid_api_key'],
    ['a real key id with a wrong secret', () => `Bearer ${mistyped(key.key)}`, 'invalid_api_key'],
  ])('%s is %s with www-authenticate: Bearer and no rate-limit headers', async (_name, auth, code) => {
    const res = await post(auth(), {}, { 'x-request-id': `deny-${code}` });
    expectDenial(res, code);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.headers['x-request-id']).toBe(`deny-${code}`);
    for (const h of RATE_HEADERS) expect(res.headers[h], h).toBeUndefined();
  });

  it("a revoked key is revoked_api_key (within authz's key-cache lifetime, KEY_CACHE_TTL_MS)", async () => {
    const revoked = orgWithKey(stack, 'revoked');
    expect((await post(bearer(revoked))).status).toBe(200);
    revokeKey(stack, revoked.id);
    // authz may serve the key record it cached before the revocation for up to 1 s (default).
    let res = await post(bearer(revoked));
    await waitFor(
      'the revocation to reach the gateway',
      async () => {
        res = await post(bearer(revoked));
        return res.status === 401;
      },
      5_000,
    );
    expectDenial(res, 'revoked_api_key');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('an expired key is expired_api_key', async () => {
    const org = orgName('expired');
    createOrg(stack, org, { models: [stack.svc.modelId] });
    // A key cannot be created already expired; it is re-dated into the past, as an operator may.
    const expired = createKey(stack, org);
    stack.admin(['key', 'update', expired.id, '--expires-at', new Date(Date.now() - 60_000).toISOString(), '--json']);
    expectDenial(await post(bearer(expired)), 'expired_api_key');
  });
});

describe('403', () => {
  it('an organization without the model is model_not_enabled, and so is a model that does not exist', async () => {
    const org = orgName('nomodel');
    createOrg(stack, org, { models: [] });
    const noModel = createKey(stack, org);
    const denied = await post(bearer(noModel));
    expectDenial(denied, 'model_not_enabled');
    // The key and the request rate are decided on headers, before the body is read; the model
    // once the embedder has parsed it. So this 403 reached the rate-limit check and says so.
    for (const h of RATE_HEADERS) expect(denied.headers[h], h).toBeDefined();
    expectDenial(await post(bearer(key), { model: 'no-such-model' }), 'model_not_enabled');
  });

  it('an organization without the endpoint is endpoint_not_enabled', async () => {
    const org = orgName('noendpoint');
    createOrg(stack, org, { models: [stack.svc.modelId], endpoints: [] });
    expectDenial(await post(bearer(createKey(stack, org))), 'endpoint_not_enabled');
  });
});

describe('429 and back', () => {
  it('past the requests per minute is 429 rate_limit_exceeded with retry-after; after waiting it is 200 again', async () => {
    const limited = orgWithKey(stack, 'limited', { rpm: 20 });
    let res: GatewayResponse | undefined;
    let allowed = 0;
    // GCRA refills one request every 3 s, so a slow loop may be allowed a few past 20.
    for (let i = 0; i < 60; i += 1) {
      res = await post(bearer(limited), { input: 'ok' });
      if (res.status !== 200) break;
      allowed += 1;
      expect(Number(res.headers['x-ratelimit-limit'])).toBe(20);
    }
    expect(allowed).toBeGreaterThanOrEqual(1);
    expect(allowed).toBeLessThan(60);
    expectDenial(res!, 'rate_limit_exceeded');
    const retryAfter = Number(res!.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(res!.headers['x-ratelimit-limit']).toBe('20');
    expect(res!.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(res!.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, retryAfter * 1000 + 200));
    const again = await post(bearer(limited), { input: 'ok' });
    expect(again.status, again.body).toBe(200);
  }, 60_000);
});

describe('usage and identity', () => {
  it("records usage equal to the tokens returned, against the key's organization only", async () => {
    const org = orgName('usage');
    createOrg(stack, org, { models: [stack.svc.modelId] });
    const own = createKey(stack, org);
    const victim = orgName('victim');
    createOrg(stack, victim, { models: [stack.svc.modelId] });
    let tokens = 0;
    const ids: string[] = [];
    for (const input of ['Blood pressure 120/80.', ['Two inputs here.', 'And a second one, longer than the first.']]) {
      ids.push(`usage-${ids.length}-${org}`);
      // A client-sent identity header is stripped by Envoy before authz, so it cannot redirect usage.
      const res = await post(
        bearer(own),
        { input },
        {
          'x-gateway-org-id': victim,
          'x-gateway-key-id': 'FORGEDKEYIDX',
          'x-gateway-model': 'forged',
          'x-request-id': ids.at(-1)!,
        },
      );
      expect(res.status, res.body).toBe(200);
      tokens += res.json().usage.total_tokens;
      expect(Number(res.headers['x-usage-total-tokens'])).toBe(res.json().usage.total_tokens);
    }
    const recorded = await waitForUsage(stack, org, { requests: 2, tokens });
    expect(recorded.tokens).toBe(tokens);
    expect(usage(stack, victim)).toMatchObject({ requests: 0, tokens: 0 });
    // Each usage record carries the client's x-request-id, key id and model as authz got them.
    const records = stack
      .admin(['usage', 'export', '--org', org, '--format', 'jsonl'])
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.request_id).sort()).toEqual([...ids].sort());
    for (const r of records) expect(r).toMatchObject({ org, key_id: own.id, model: stack.svc.modelId });
  }, 60_000);

  it("client-sent x-gateway-* headers are stripped before authz (Envoy's own log shows what passed)", async () => {
    const forged = { 'x-gateway-org-id': 'forged-org', 'x-gateway-key-id': 'FORGEDKEYIDX', 'x-gateway-model': 'forged' };
    const denied = await post(undefined, {}, { ...forged, 'x-request-id': 'forged-denied' });
    expect(denied.status).toBe(401);
    const allowed = await post(bearer(key), {}, { ...forged, 'x-request-id': 'forged-allowed' });
    expect(allowed.status).toBe(200);
    const line = (id: string) =>
      readFileSync(stack.processes.envoy.logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes(`"request_id":"${id}"`));
    await waitFor('Envoy to log both requests', async () => Boolean(line('forged-denied') && line('forged-allowed')), 10_000);
    // Denied: authz added nothing, and the client's header did not survive.
    expect(JSON.parse(line('forged-denied')!).org).toBeNull();
    // Allowed: the org is the one authz resolved from the key, not the forged one.
    expect(JSON.parse(line('forged-allowed')!).org).toBe(key.org);
  }, 30_000);

  it('requests that were refused record no usage', async () => {
    const org = orgName('refused');
    createOrg(stack, org, { models: [stack.svc.modelId] });
    const k = createKey(stack, org);
    expect((await post(bearer(k), { input_type: 'bogus' })).status).toBe(400);
    expect((await post(bearer(k), { input: 'counted' })).status).toBe(200);
    // Once the 200 is recorded, the earlier 400 would have been too, had it counted.
    const recorded = await waitForUsage(stack, org, { requests: 1 });
    // A later flush could still add the 400; give it the flush interval several times over.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(usage(stack, org)).toEqual(recorded);
  }, 60_000);
});
