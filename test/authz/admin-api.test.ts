/**
 * The admin API over HTTP (Fastify inject, real Redis under the test's own prefix, real authz
 * Checks for rotation): authentication on every operation, the session cookie and CSRF rules,
 * the CLI's input rules with fields named, problem bodies for every error, and the audit trail.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { adminDocument } from '../../openapi/admin-document.js';
import { openAdminDeps } from '../../authz/src/admin/deps.js';
import { buildAdminServer } from '../../authz/src/admin/http/server.js';
import { documentedOperations } from '../../authz/src/admin/http/routes.js';
import { createOperations } from '../../authz/src/admin/operations.js';
import type { Connection } from '../../authz/src/store/connection.js';
import { RedisStore } from '../../authz/src/store/redis.js';
import { envoyCheck, headerMap, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const TOKEN = 'admin-token-for-tests-0123456789abcdefghij';
const PROBLEM = 'application/problem+json; charset=utf-8';
const prefix = testPrefix();
const config = { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1_000_000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET };
let app: FastifyInstance;
let connection: Connection;
let clock = Date.parse('2031-03-04T05:06:07Z');

beforeAll(async () => {
  const opened = openAdminDeps({ ...config, redisUrl: TEST_REDIS_URL, redisKeyPrefix: prefix, redisTimeoutMs: 2000 }, () => clock);
  connection = opened.connection;
  await connection.ready();
  app = buildAdminServer({ ops: createOperations(opened.deps), config, token: TOKEN, actorHeader: 'x-forwarded-email', sessionTtlMs: 3_600_000, now: () => clock, logLevel: 'silent' });
});

afterAll(async () => {
  await app.close();
  await connection.purge();
  await connection.close();
});

const bearer = { authorization: `Bearer ${TOKEN}` };
const call = (options: InjectOptions) => app.inject(options);

function expectProblem(response: Awaited<ReturnType<typeof call>>, status: number, code: string): Record<string, any> {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toBe(PROBLEM);
  const body = response.json();
  expect(body).toMatchObject({ type: 'about:blank', status, code, error: { code } });
  return body;
}

async function signIn(name = 'alice', headers: Record<string, string> = {}): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const response = await call({ method: 'POST', url: '/api/session', payload: { token: TOKEN, name }, headers: { 'sec-fetch-site': 'same-origin', ...headers } });
  expect(response.statusCode, response.body).toBe(200);
  const setCookie = String(response.headers['set-cookie']);
  return { cookie: setCookie.split(';', 1)[0]!, csrf: response.json().csrfToken, setCookie };
}

describe('admin API: authentication', () => {
  it('refuses every documented operation without a token or session, before reading the body', async () => {
    const operations = documentedOperations(adminDocument).filter((op) => op.operationId !== 'createSession');
    expect(operations.length).toBeGreaterThan(12);
    for (const op of operations) {
      const url = op.url.replace(':org', 'acme').replace(':key', 'ABCDEFGHIJKL');
      for (const headers of [{}, { authorization: 'Bearer wrong-token' }, { cookie: 'ctg_admin=forged' }]) {
        const response = await call({ method: op.method, url, headers: { ...headers, 'content-type': 'application/json' }, payload: '{not json' });
        expectProblem(response, 401, 'admin_unauthorized');
      }
    }
  });

  it('signs in with the token only: HttpOnly SameSite=Strict cookie; wrong token 401; cross-site sign-in 403', async () => {
    const { setCookie, cookie } = await signIn();
    expect(setCookie).toMatch(/^ctg_admin=[\w-]{40,}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=3600$/);
    const session = await call({ method: 'GET', url: '/api/session', headers: { cookie } });
    expect(session.json()).toMatchObject({ actor: 'token:alice', modelId: TEST_MODEL, defaults: { rpm: 600, tpm: 1_000_000 } });
    expectProblem(await call({ method: 'POST', url: '/api/session', payload: { token: 'x'.repeat(40) } }), 401, 'admin_unauthorized');
    expectProblem(await call({ method: 'POST', url: '/api/session', payload: { token: TOKEN }, headers: { 'sec-fetch-site': 'cross-site' } }), 403, 'csrf_rejected');
    expectProblem(await call({ method: 'POST', url: '/api/session', payload: { token: TOKEN }, headers: { origin: 'https://evil.example' } }), 403, 'csrf_rejected');
  });

  it('signs out: the session stops working', async () => {
    const { cookie, csrf } = await signIn('bob');
    const out = await call({ method: 'DELETE', url: '/api/session', headers: { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' } });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expectProblem(await call({ method: 'GET', url: '/api/orgs', headers: { cookie } }), 401, 'admin_unauthorized');
  });
});

describe('admin API: CSRF', () => {
  it('a session needs its CSRF token and a same-origin request to change anything; reads need neither', async () => {
    const { cookie, csrf } = await signIn();
    const create = (headers: Record<string, string>, id: string) => call({ method: 'POST', url: '/api/orgs', payload: { id }, headers: { cookie, ...headers } });
    expectProblem(await create({}, 'csrf-a'), 403, 'csrf_rejected');
    expectProblem(await create({ 'x-csrf-token': 'not-the-token' }, 'csrf-b'), 403, 'csrf_rejected');
    expectProblem(await create({ 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' }, 'csrf-c'), 403, 'csrf_rejected');
    expectProblem(await create({ 'x-csrf-token': csrf, origin: 'https://evil.example', host: 'localhost:80' }, 'csrf-d'), 403, 'csrf_rejected');
    const other = await signIn('mallory');
    expectProblem(await create({ 'x-csrf-token': other.csrf, 'sec-fetch-site': 'same-origin' }, 'csrf-e'), 403, 'csrf_rejected');
    expect((await create({ 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' }, 'csrf-ok')).statusCode).toBe(201);
    expect((await call({ method: 'GET', url: '/api/orgs', headers: { cookie } })).statusCode).toBe(200);
    // None of the refused attempts created anything.
    const ids = (await call({ method: 'GET', url: '/api/orgs', headers: bearer })).json().orgs.map((o: { id: string }) => o.id);
    expect(ids.filter((id: string) => id.startsWith('csrf-'))).toEqual(['csrf-ok']);
  });

  it('behind an SSO proxy: the console signs in without a typed token, and the proxy\'s bearer token alone changes nothing', async () => {
    const proxied = { ...bearer, 'x-forwarded-email': 'dana@hospital.example', 'sec-fetch-site': 'same-origin' };
    const signedIn = await call({ method: 'POST', url: '/api/session', payload: {}, headers: proxied });
    expect(signedIn.json()).toMatchObject({ actor: 'sso:dana@hospital.example' });
    const cookie = String(signedIn.headers['set-cookie']).split(';', 1)[0]!;
    expectProblem(await call({ method: 'POST', url: '/api/orgs', payload: { id: 'sso-x' }, headers: proxied }), 403, 'csrf_rejected');
    const made = await call({ method: 'POST', url: '/api/orgs', payload: { id: 'sso-ok' }, headers: { ...proxied, cookie, 'x-csrf-token': signedIn.json().csrfToken } });
    expect(made.statusCode).toBe(201);
    expectProblem(await call({ method: 'POST', url: '/api/session', payload: {} }), 401, 'admin_unauthorized');
  });

  it('a bearer client needs no CSRF token, but a browser request from another origin is refused', async () => {
    expect((await call({ method: 'POST', url: '/api/orgs', payload: { id: 'bearer-ok' }, headers: bearer })).statusCode).toBe(201);
    expectProblem(await call({ method: 'POST', url: '/api/orgs', payload: { id: 'bearer-x' }, headers: { ...bearer, 'sec-fetch-site': 'cross-site' } }), 403, 'csrf_rejected');
  });
});

describe('admin API: input rules and problem bodies', () => {
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) => call({ method: 'POST', url, payload: payload as never, headers: { ...bearer, ...headers } });

  it('names the field that breaks a rule', async () => {
    expect(expectProblem(await post('/api/orgs', { id: 'bad:id' }), 400, 'invalid_body').detail).toMatch(/^body\.id: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', rpm: -1 }), 400, 'invalid_body').detail).toMatch(/^body\.rpm: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', models: ['bad model'] }), 400, 'invalid_body').detail).toMatch(/^body\.models\.0: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', endpoints: ['chat'] }), 400, 'invalid_body').detail).toMatch(/^body\.endpoints\.0: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', colour: 'red' }), 400, 'invalid_body').detail).toBe('body.colour: is not a known field');
    expect(expectProblem(await post('/api/orgs', {}), 400, 'invalid_body').detail).toBe('body.id: is required');
    expect(expectProblem(await post('/api/orgs', { id: 'x', name: 'tab\there' }), 400, 'invalid_body').detail).toMatch(/^name: .*control characters/);
    expectProblem(await post('/api/orgs', 'id=x', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_body');
    expectProblem(await post('/api/orgs', '{"id":', { 'content-type': 'application/json' }), 400, 'invalid_body');
    expectProblem(await post('/api/orgs', { id: 'x', name: 'n'.repeat(70_000) }), 413, 'payload_too_large');
    await post('/api/orgs', { id: 'rules' });
    expect(expectProblem(await post('/api/orgs/rules/keys', { expiresAt: 'tomorrow' }), 400, 'invalid_body').detail).toMatch(/^body\.expiresAt: /);
    expect(expectProblem(await call({ method: 'GET', url: '/api/orgs/rules/usage?days=0', headers: bearer }), 400, 'invalid_body').detail).toMatch(/^querystring\.days: /);
    expect(expectProblem(await call({ method: 'GET', url: '/api/usage/export?format=xml', headers: bearer }), 400, 'invalid_body').detail).toMatch(/^querystring\.format: /);
    expect(expectProblem(await call({ method: 'GET', url: '/api/usage/export?format=csv&since=2031-01-02T00:00:00Z&until=2031-01-01T00:00:00Z', headers: bearer }), 400, 'invalid_body').detail).toBe('since: must not be after until');
  });

  it('answers 404, 405 with allow, and 409 with problem bodies', async () => {
    expectProblem(await call({ method: 'GET', url: '/api/nothing', headers: bearer }), 404, 'not_found');
    expectProblem(await call({ method: 'GET', url: '/api/orgs/nobody', headers: bearer }), 404, 'not_found');
    expectProblem(await post('/api/keys/ABCDEFGHIJKL/revoke', undefined), 404, 'not_found');
    const wrongMethod = await call({ method: 'PUT', url: '/api/orgs', headers: bearer });
    expectProblem(wrongMethod, 405, 'method_not_allowed');
    expect(wrongMethod.headers.allow).toBe('GET, POST');
    await post('/api/orgs', { id: 'twice' });
    expectProblem(await post('/api/orgs', { id: 'twice' }), 409, 'conflict');
  });
});

describe('admin API: Redis unavailable', () => {
  it('answers 503 store_unavailable with retry-after, not a hang or a 500', async () => {
    const dead = openAdminDeps({ ...config, redisUrl: 'redis://127.0.0.1:1', redisKeyPrefix: prefix, redisTimeoutMs: 200 });
    const offline = buildAdminServer({ ops: createOperations(dead.deps), config, token: TOKEN, actorHeader: null, sessionTtlMs: 60_000, now: Date.now, logLevel: 'silent' });
    try {
      const response = await offline.inject({ method: 'GET', url: '/api/orgs', headers: bearer });
      expectProblem(response, 503, 'store_unavailable');
      expect(response.headers['retry-after']).toBe('1');
    } finally {
      await offline.close();
      await dead.connection.close();
    }
  });
});

describe('admin API: organizations, keys and rotation', () => {
  let authz: RunningAuthz;
  beforeAll(async () => {
    authz = await startAuthz(testConfig(prefix), { clock: () => clock });
  });
  afterAll(async () => {
    await authz.stop();
  });
  // 'ok' when Check lets the request through with the model granted (x-gateway-model), 'no model'
  // when it passes without the grant (the embedder then answers model_not_enabled), else the code.
  const verdict = async (key: string) => {
    const response = await authz.check(envoyCheck({ authorization: `Bearer ${key}` }));
    if (!response.ok_response) return JSON.parse(response.denied_response!.body).code;
    return headerMap(response.ok_response.headers)['x-gateway-model'] === TEST_MODEL ? 'ok' : 'no model';
  };

  it('renames, disables and enables the model, sets and clears limits', async () => {
    const created = (await call({ method: 'POST', url: '/api/orgs', payload: { id: 'clinic', name: 'St. Elsewhere', rpm: 60 }, headers: bearer })).json();
    expect(created).toMatchObject({ id: 'clinic', name: 'St. Elsewhere', models: [TEST_MODEL], rpm: 60, rpmIsDefault: false, tpm: 1_000_000, tpmIsDefault: true });
    const patch = (payload: unknown) => call({ method: 'PATCH', url: '/api/orgs/clinic', payload: payload as never, headers: bearer });
    expect((await patch({ name: 'Clinic North', models: [], rpm: null, tpm: 5000 })).json()).toMatchObject({ name: 'Clinic North', models: [], rpm: 600, rpmIsDefault: true, tpm: 5000 });
    const key = (await call({ method: 'POST', url: '/api/orgs/clinic/keys', payload: { name: 'etl' }, headers: bearer })).json();
    expect(await verdict(key.key)).toBe('no model');
    await patch({ models: [TEST_MODEL] });
    expect(await verdict(key.key)).toBe('ok');
    expect((await call({ method: 'GET', url: '/api/orgs/clinic', headers: bearer })).json()).toMatchObject({ name: 'Clinic North', keys: 1 });
  });

  it('rotates with an overlap: both keys work until it ends, then only the new one', async () => {
    const old = (await call({ method: 'POST', url: '/api/orgs/clinic/keys', payload: { name: 'pipeline' }, headers: bearer })).json();
    expect(old.key).toMatch(new RegExp(`^CTG_${old.id}_[A-Z]{38}$`));
    const rotated = await call({ method: 'POST', url: `/api/keys/${old.id}/rotate`, payload: { overlapSeconds: 600 }, headers: bearer });
    expect(rotated.statusCode).toBe(201);
    const { old: before, new: fresh } = rotated.json();
    expect(before).toMatchObject({ id: old.id, status: 'active', expiresAt: new Date(clock + 600_000).toISOString() });
    expect(fresh).toMatchObject({ org: 'clinic', name: 'pipeline', status: 'active', expiresAt: null });
    expect([await verdict(old.key), await verdict(fresh.key)]).toEqual(['ok', 'ok']);
    clock += 600_000;
    expect([await verdict(old.key), await verdict(fresh.key)]).toEqual(['expired_api_key', 'ok']);
    expectProblem(await call({ method: 'POST', url: `/api/keys/${old.id}/rotate`, payload: { overlapSeconds: 60 }, headers: bearer }), 409, 'conflict');
    expectProblem(await call({ method: 'POST', url: `/api/keys/${fresh.id}/rotate`, payload: { overlapSeconds: 31 * 86_400 }, headers: bearer }), 400, 'invalid_body');
  });

  it('renames a key, changes its expiry, revokes it; lists keys without secrets', async () => {
    const key = (await call({ method: 'POST', url: '/api/orgs/clinic/keys', payload: { name: 'temp' }, headers: bearer })).json();
    const later = new Date(clock + 86_400_000).toISOString();
    expect((await call({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { name: 'renamed', expiresAt: later }, headers: bearer })).json()).toMatchObject({ name: 'renamed', expiresAt: later });
    expect((await call({ method: 'POST', url: `/api/keys/${key.id}/revoke`, headers: bearer })).json()).toMatchObject({ status: 'revoked' });
    expect(await verdict(key.key)).toBe('revoked_api_key');
    const listed = await call({ method: 'GET', url: '/api/orgs/clinic/keys', headers: bearer });
    expect(listed.body).not.toContain(key.key.split('_')[2]);
    expect(listed.json().keys.find((k: { id: string }) => k.id === key.id)).toMatchObject({ name: 'renamed', status: 'revoked' });
  });
});

describe('admin API: usage series for the charts', () => {
  it('gives requests and tokens per UTC day for the organization and each key, zeros filled in', async () => {
    clock = Date.now();
    const day = 86_400_000;
    await call({ method: 'POST', url: '/api/orgs', payload: { id: 'charted' }, headers: bearer });
    const store = new RedisStore(connection);
    let n = 0;
    const use = (keyId: string, tokens: number, time: number) => store.recordUsage({ org: 'charted', keyId, model: TEST_MODEL, requestId: 'r', tokens, time }, `chart-${(n += 1)}`);
    await use('AAAAAAAAAAAA', 10, clock);
    await use('AAAAAAAAAAAA', 5, clock);
    await use('BBBBBBBBBBBB', 7, clock - 2 * day);
    await use('BBBBBBBBBBBB', 99, clock - 30 * day);
    const series = (await call({ method: 'GET', url: '/api/orgs/charted/usage?days=7', headers: bearer })).json();
    const today = new Date(clock).toISOString().slice(0, 10);
    const twoDaysAgo = new Date(clock - 2 * day).toISOString().slice(0, 10);
    expect(series.days).toHaveLength(7);
    expect(series.days.at(-1)).toEqual({ day: today, requests: 2, tokens: 15 });
    expect(series.days.find((d: { day: string }) => d.day === twoDaysAgo)).toEqual({ day: twoDaysAgo, requests: 1, tokens: 7 });
    expect(series.days.reduce((sum: number, d: { requests: number }) => sum + d.requests, 0)).toBe(3);
    expect(series.keys.map((k: { keyId: string }) => k.keyId)).toEqual(['AAAAAAAAAAAA', 'BBBBBBBBBBBB']);
    expect(series.keys[0].days.at(-1)).toEqual({ day: today, requests: 2, tokens: 15 });
    expect(series.keys[1].days.at(-1)).toEqual({ day: today, requests: 0, tokens: 0 });
  });
});

describe('admin API: audit trail and exports', () => {
  it('records who did what from where, never a key secret; the chain verifies', async () => {
    const sso = await signIn('ignored', { 'x-forwarded-email': 'carol@hospital.example' });
    const created = await call({ method: 'POST', url: '/api/orgs/rules/keys', payload: { name: 'audited' }, headers: { cookie: sso.cookie, 'x-csrf-token': sso.csrf, 'sec-fetch-site': 'same-origin' } });
    const secret = created.json().key.split('_')[2];
    const { records, head } = (await call({ method: 'GET', url: '/api/audit?limit=5', headers: bearer })).json();
    expect(records[0]).toMatchObject({ seq: head.seq, hash: head.hash, actor: 'sso:carol@hospital.example', action: 'key.create', target: `key:${created.json().id}`, from: '127.0.0.1', detail: { org: 'rules', name: 'audited' } });
    expect(records[1]).toMatchObject({ actor: 'sso:carol@hospital.example', action: 'session.create' });
    expect(records[0].prevHash).toBe(records[1].hash);
    expect((await call({ method: 'GET', url: '/api/audit/verify', headers: bearer })).json()).toMatchObject({ ok: true, records: head.seq, head });
    // The secret is nowhere in Redis: not in the key record, not in the audit stream.
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const dump: string[] = [];
      for (const key of await redis.keys(`${prefix}*`)) {
        const type = await redis.type(key);
        if (type === 'hash') dump.push(JSON.stringify(await redis.hgetall(key)));
        else if (type === 'stream') dump.push(JSON.stringify(await redis.xrange(key, '-', '+')));
        else if (type === 'set') dump.push(JSON.stringify(await redis.smembers(key)));
        else if (type === 'string') dump.push(String(await redis.get(key)));
      }
      expect(dump.join('\n')).toContain(created.json().id);
      expect(dump.join('\n')).not.toContain(secret);
    } finally {
      redis.disconnect();
    }
  });

  it('exports usage as CSV and JSON lines, and audits the export', async () => {
    const csv = await call({ method: 'GET', url: '/api/usage/export?format=csv&org=clinic', headers: bearer });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe('attachment; filename="usage.csv"');
    expect(csv.body.split('\n')[0]).toBe('time,org,key_id,model,request_id,tokens');
    const jsonl = await call({ method: 'GET', url: '/api/usage/export?format=jsonl', headers: bearer });
    expect(jsonl.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=2', headers: bearer })).json();
    expect(records.map((r: { action: string; target: string }) => `${r.action} ${r.target}`)).toEqual(['usage.export usage', 'usage.export org:clinic']);
  });
});
