import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyGrant } from '../../contract/grant.js';
import { envoyCheck, headerMap, startAuthz, testConfig, TEST_MODEL, type RunningAuthz } from '../support/grpc-authz.js';
import { TEST_GRANT_SECRET } from '../support/settlement.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';
import { mistyped } from '../support/mistype.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
let now = NOW;
let authz: RunningAuthz;
const logLines: string[] = [];
let good: { id: string; key: string };

beforeAll(async () => {
  const log = pino(
    { level: 'debug' },
    new Writable({
      write: (chunk, _enc, done) => {
        logLines.push(String(chunk));
        done();
      },
    }),
  );
  authz = await startAuthz(testConfig(testPrefix()), { clock: () => now, log });
  await addOrg(authz.store, 'acme');
  good = await addKey(authz.store, 'acme');
});

afterAll(async () => {
  await authz.store.purge();
  await authz.stop();
});

function problemOf(response: Awaited<ReturnType<RunningAuthz['check']>>) {
  return JSON.parse(response.denied_response!.body) as { status: number; code: string; title: string; detail: string; type: string };
}

async function expectDenied(request: Parameters<typeof envoyCheck>[0], status: number, code: string) {
  const response = await authz.check(envoyCheck(request));
  expect(response.http_response).toBe('denied_response');
  expect(response.status?.code).not.toBe(0);
  expect(response.denied_response?.status?.code).toBe(statusName(status));
  const headers = headerMap(response.denied_response?.headers);
  expect(headers['content-type']).toBe('application/problem+json; charset=utf-8');
  const problem = problemOf(response);
  expect(problem).toMatchObject({ status, code });
  expect(problem.detail.length).toBeGreaterThan(0);
  return { response, headers, problem };
}

// proto-loader decodes enums as names (enums: String).
function statusName(status: number): string {
  return ({ 401: 'Unauthorized', 403: 'Forbidden', 429: 'TooManyRequests' } as Record<number, string>)[status]!;
}

describe('Check: allowed', () => {
  it('lets a valid key through with identity headers upstream and rate-limit headers to the client', async () => {
    const response = await authz.check(envoyCheck({ authorization: `Bearer ${good.key}` }));
    expect(response.status?.code).toBe(0);
    expect(response.http_response).toBe('ok_response');
    const ok = response.ok_response!;
    const { 'x-gateway-grant': signed, ...identity } = headerMap(ok.headers);
    expect(identity).toEqual({ 'x-gateway-org-id': 'acme', 'x-gateway-key-id': good.id, 'x-gateway-model': TEST_MODEL });
    // The grant the embedder acts on: signed with the shared secret, naming this key, its limit and a fresh uid.
    const grant = verifyGrant(signed, [TEST_GRANT_SECRET], Date.now());
    expect(grant).toMatchObject({ ok: true, claims: { org: 'acme', key: good.id, model: TEST_MODEL, tpm: 1_000_000 } });
    const again = verifyGrant(
      headerMap((await authz.check(envoyCheck({ authorization: `Bearer ${good.key}` }))).ok_response!.headers)['x-gateway-grant'],
      [TEST_GRANT_SECRET],
      Date.now(),
    );
    expect(again.ok && grant.ok && again.claims.uid !== grant.claims.uid).toBe(true);
    expect(grant.ok && grant.claims.exp - Date.now()).toBeGreaterThan(60_000);
    // Overwrite, not append: a smuggled identity header cannot survive beside ours.
    expect(ok.headers.every((h) => h.append_action === 'OVERWRITE_IF_EXISTS_OR_ADD')).toBe(true);
    expect(ok.headers_to_remove).toEqual(['authorization']);
    expect(headerMap(ok.response_headers_to_add)).toEqual({
      'x-ratelimit-limit': '600',
      'x-ratelimit-remaining': '599',
      'x-ratelimit-reset': '1',
    });
  });

  it('grants x-gateway-model only to an organization that may use the served model', async () => {
    await addOrg(authz.store, 'nomodels', { models: [] });
    const key = await addKey(authz.store, 'nomodels');
    const response = await authz.check(envoyCheck({ authorization: `Bearer ${key.key}` }));
    // Allowed on headers (the body may still be a 400); the embedder refuses any model without the grant.
    expect(response.http_response).toBe('ok_response');
    const { 'x-gateway-grant': signed, ...identity } = headerMap(response.ok_response!.headers);
    expect(identity).toEqual({ 'x-gateway-org-id': 'nomodels', 'x-gateway-key-id': key.id });
    expect(verifyGrant(signed, [TEST_GRANT_SECRET], Date.now())).toMatchObject({ ok: true, claims: { org: 'nomodels', model: '' } });
  });

  it('removes every client-sent x-gateway-* header it does not set itself', async () => {
    const forged = { 'x-gateway-model': TEST_MODEL, 'x-gateway-org-id': 'other', 'x-gateway-anything': '1' };
    await addOrg(authz.store, 'forger', { models: [] });
    const key = await addKey(authz.store, 'forger');
    const ok = (await authz.check(envoyCheck({ authorization: `Bearer ${key.key}`, headers: forged }))).ok_response!;
    expect(ok.headers_to_remove.sort()).toEqual(['authorization', 'x-gateway-anything', 'x-gateway-model']);
    expect(headerMap(ok.headers)['x-gateway-org-id']).toBe('forger');
  });
});

describe('Check: 401', () => {
  it.each([
    ['no Authorization header', undefined, 'missing_api_key'],
    ['an empty Authorization header', '', 'missing_api_key'],
    ['a Basic scheme', 'Basic dXNlcjpwYXNz', 'malformed_api_key'],
    ['a malformed key', 'Bearer CTG_SHORT_KEY', 'malformed_api_key'],
    ['an unknown key', `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`, 'invalid_api_key'],
  ])('answers %s with %s and www-authenticate: Bearer', async (_label, authorization, code) => {
    const { headers } = await expectDenied({ authorization }, 401, code);
    expect(headers['www-authenticate']).toBe('Bearer');
  });

  it('answers a wrong secret for a real key id with invalid_api_key', async () => {
    const wrong = mistyped(good.key);
    await expectDenied({ authorization: `Bearer ${wrong}` }, 401, 'invalid_api_key');
  });

  it('answers a revoked key with revoked_api_key', async () => {
    const revoked = await addKey(authz.store, 'acme', { revoked: true });
    await expectDenied({ authorization: `Bearer ${revoked.key}` }, 401, 'revoked_api_key');
  });

  it('answers an expired key with expired_api_key, by the injected clock', async () => {
    const expiring = await addKey(authz.store, 'acme', { expiresAt: NOW + 60_000 });
    expect((await authz.check(envoyCheck({ authorization: `Bearer ${expiring.key}` }))).http_response).toBe('ok_response');
    now = NOW + 60_000;
    try {
      await expectDenied({ authorization: `Bearer ${expiring.key}` }, 401, 'expired_api_key');
    } finally {
      now = NOW;
    }
  });
});

describe('Check: 403', () => {
  it('answers endpoint_not_enabled for an organization without the endpoint, and for a path with none', async () => {
    await addOrg(authz.store, 'noendpoints', { endpoints: [] });
    const key = await addKey(authz.store, 'noendpoints');
    const { headers } = await expectDenied({ authorization: `Bearer ${key.key}` }, 403, 'endpoint_not_enabled');
    expect(headers['www-authenticate']).toBeUndefined();
    await expectDenied({ authorization: `Bearer ${good.key}`, path: '/v1/chat/completions' }, 403, 'endpoint_not_enabled');
  });
});

describe('Check: 429', () => {
  it('refuses past the organization limit with retry-after and the rate-limit headers', async () => {
    await addOrg(authz.store, 'small', { rpm: 2 });
    const key = await addKey(authz.store, 'small');
    const request = { authorization: `Bearer ${key.key}` };
    const first = await authz.check(envoyCheck(request));
    expect(headerMap(first.ok_response!.response_headers_to_add)).toMatchObject({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '30',
    });
    expect((await authz.check(envoyCheck(request))).http_response).toBe('ok_response');
    const { headers, problem } = await expectDenied(request, 429, 'rate_limit_exceeded');
    expect(headers).toMatchObject({
      'retry-after': '30',
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
    expect(problem.title).toBe('Rate limit exceeded');
    now = NOW + 30_000;
    try {
      expect((await authz.check(envoyCheck(request))).http_response).toBe('ok_response');
    } finally {
      now = NOW;
    }
  });
});

describe('Check: request text stays out of logs and replies', () => {
  it('never logs or echoes headers, keys or the model field', async () => {
    const canary = 'CANARY7Q3-clinical-text';
    await authz.check(envoyCheck({ authorization: `Bearer ${canary}`, headers: { 'x-note': canary } }));
    const denied = await authz.check(envoyCheck({ authorization: `Bearer ${good.key}`, headers: { 'x-note': canary } }));
    expect(JSON.stringify(denied)).not.toContain('CANARY7Q3');
    const allowed = await authz.check(envoyCheck({ authorization: `Bearer ${good.key}`, headers: { 'x-note': canary } }));
    expect(JSON.stringify(allowed)).not.toContain('CANARY7Q3');
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain('CANARY7Q3');
    expect(logLines.join('')).not.toContain(good.key.split('_')[2]!);
  });
});
