/**
 * The admin API over HTTP (Fastify inject, real Redis under the test's own prefix, real authz
 * Checks for rotation): authentication on every operation, the session cookie and CSRF rules,
 * the CLI's input rules with fields named, problem bodies for every error, and the audit trail.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { adminDocument } from '../../openapi/admin-document.js';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { documentedOperations } from '../../admin/src/http/routes.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { envoyCheck, headerMap, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { seedUsage } from '../support/settlement.js';

const PROBLEM = 'application/problem+json; charset=utf-8';
const prefix = testPrefix();
const config = { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1_000_000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET };
const audit = {
  auditSecret: 'admin-api-tests-audit-secret-0123456789ab',
  auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'admin-api-')), 'anchor.jsonl'),
};
const open = { ...config, ...audit, redisUrl: TEST_REDIS_URL, redisKeyPrefix: prefix, redisTimeoutMs: 2000 };
let app: FastifyInstance;
let connection: Connection;
let deps: AdminDeps;
let clock = Date.parse('2031-03-04T05:06:07Z');
/** Each administrator's token: alice owns, bob and mallory operate, vera views. */
const tokens: Record<string, string> = {};
let TOKEN = '';

const build = (trustedProxies: string[] = [], publicUrl: string | null = null) =>
  buildAdminServer({
    ops: createOperations(deps),
    config,
    stores: deps,
    sessionLifetimes: { idleMs: 3_600_000, maxMs: 43_200_000 },
    trustedProxies,
    oidc: null,
    publicUrl,
    logLevel: 'silent',
  });

beforeAll(async () => {
  const opened = openAdminDeps(open, () => clock);
  ({ connection, deps } = opened);
  await connection.ready();
  const ops = createOperations(deps);
  const cli = { actor: 'cli:test', from: 'cli@test' };
  for (const [name, role] of [
    ['alice', 'owner'],
    ['bob', 'operator'],
    ['mallory', 'operator'],
    ['vera', 'viewer'],
  ] as const) {
    await ops.createAdmin({ name, role }, cli);
    tokens[name] = (await ops.createAdminToken(name, cli)).token;
  }
  TOKEN = tokens.alice!;
  app = build();
});

afterAll(async () => {
  await app.close();
  await connection.purge();
  await connection.close();
});

const bearerOf = (name: string) => ({ authorization: `Bearer ${tokens[name]}` });
const bearer = {
  get authorization() {
    return `Bearer ${TOKEN}`;
  },
};
const call = (options: InjectOptions) => app.inject(options);

function expectProblem(response: Awaited<ReturnType<typeof call>>, status: number, code: string): Record<string, any> {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toBe(PROBLEM);
  const body = response.json();
  expect(body).toMatchObject({ type: 'about:blank', status, code, error: { code } });
  return body;
}

async function signIn(
  name = 'alice',
  headers: Record<string, string> = {},
  server = app,
): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const response = await server.inject({
    method: 'POST',
    url: '/api/session',
    payload: { token: tokens[name] },
    headers: { 'sec-fetch-site': 'same-origin', ...headers },
  });
  expect(response.statusCode, response.body).toBe(200);
  const setCookie = String(response.headers['set-cookie']);
  return { cookie: setCookie.split(';', 1)[0]!, csrf: response.json().csrfToken, setCookie };
}

describe('admin API: authentication', () => {
  it('refuses every documented operation without a token or session, before reading the body', async () => {
    const open = new Set(['createSession', 'signInOptions', 'startOidc', 'finishOidc', 'getAuditPublicKey']);
    const operations = documentedOperations(adminDocument).filter((op) => !open.has(op.operationId));
    expect(operations.length).toBeGreaterThan(16);
    for (const op of operations) {
      const url = op.url.replace(':org', 'acme').replace(':key', 'ABCDEFGHIJKL').replace(':name', 'alice').replace(':id', 'abc');
      // From an address of its own each time, so the throttle does not answer first.
      for (const [i, headers] of [{}, { authorization: 'Bearer wrong-token' }, { cookie: 'ctg_admin=forged' }].entries()) {
        const response = await call({
          method: op.method,
          url,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: '{not json',
          remoteAddress: `10.9.${operations.indexOf(op)}.${i}`,
        });
        expectProblem(response, 401, 'admin_unauthorized');
      }
    }
  });

  it("signs in with an administrator's token: HttpOnly SameSite=Strict cookie naming them; wrong token 401; cross-site sign-in 403", async () => {
    const { setCookie, cookie } = await signIn('bob');
    expect(setCookie).toMatch(/^ctg_admin=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const session = await call({ method: 'GET', url: '/api/session', headers: { cookie } });
    expect(session.json()).toMatchObject({
      actor: 'admin:bob',
      admin: 'bob',
      role: 'operator',
      via: 'token',
      modelId: TEST_MODEL,
      defaults: { rpm: 600, tpm: 1_000_000 },
    });
    expectProblem(await call({ method: 'POST', url: '/api/session', payload: { token: 'x'.repeat(40) } }), 401, 'admin_unauthorized');
    expectProblem(
      await call({ method: 'POST', url: '/api/session', payload: { token: TOKEN }, headers: { 'sec-fetch-site': 'cross-site' } }),
      403,
      'csrf_rejected',
    );
    expectProblem(
      await call({ method: 'POST', url: '/api/session', payload: { token: TOKEN }, headers: { origin: 'https://evil.example' } }),
      403,
      'csrf_rejected',
    );
    // A typed name is no longer accepted: the identity comes from the token.
    expectProblem(
      await call({
        method: 'POST',
        url: '/api/session',
        payload: { token: TOKEN, name: 'someone' },
        headers: { 'sec-fetch-site': 'same-origin' },
      }),
      400,
      'invalid_body',
    );
  });

  it('marks the session cookie Secure behind an https public origin, with or without single sign-on', async () => {
    expect((await signIn('bob')).setCookie).not.toContain('Secure');
    const behindTls = build([], 'https://admin.example.org');
    try {
      expect((await signIn('bob', {}, behindTls)).setCookie).toMatch(/; Secure(;|$)/);
    } finally {
      await behindTls.close();
    }
  });

  it('signs out: the session stops working', async () => {
    const { cookie, csrf } = await signIn('bob');
    const out = await call({
      method: 'DELETE',
      url: '/api/session',
      headers: { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' },
    });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expectProblem(await call({ method: 'GET', url: '/api/orgs', headers: { cookie } }), 401, 'admin_unauthorized');
  });

  it('keeps sessions in Redis: another server (a restart, a replica) honours them; the id itself is not stored', async () => {
    const { cookie, csrf } = await signIn('bob');
    const replica = build();
    try {
      const made = await replica.inject({
        method: 'POST',
        url: '/api/orgs',
        payload: { id: 'after-restart' },
        headers: { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' },
      });
      expect(made.statusCode, made.body).toBe(201);
    } finally {
      await replica.close();
    }
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const keys = await redis.keys(`${prefix}admin:session:*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.join('\n')).not.toContain(cookie.split('=')[1]!);
    } finally {
      redis.disconnect();
    }
  });

  it('throttles refused tokens (429 past 10 in 5 minutes, audited with the token id tried) but never refuses a valid token from the same address', async () => {
    const from = '10.66.0.1';
    const guessed = `ctga_${'ab12'.repeat(3)}_${'x'.repeat(43)}`;
    for (let i = 0; i < 10; i += 1) {
      const attempt =
        i % 2 === 0
          ? call({ method: 'POST', url: '/api/session', payload: { token: i === 0 ? guessed : `wrong-${i}` }, remoteAddress: from })
          : call({ method: 'GET', url: '/api/orgs', headers: { authorization: `Bearer wrong-${i}` }, remoteAddress: from });
      expectProblem(await attempt, 401, 'admin_unauthorized');
    }
    const refused = await call({ method: 'POST', url: '/api/session', payload: { token: 'wrong-again' }, remoteAddress: from });
    expectProblem(refused, 429, 'too_many_sign_in_attempts');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(200);
    expectProblem(
      await call({ method: 'GET', url: '/api/orgs', headers: { authorization: 'Bearer wrong-11' }, remoteAddress: from }),
      429,
      'too_many_sign_in_attempts',
    );
    // The address's valid tokens still work: a sign-in and a bearer call.
    const signedIn = await call({
      method: 'POST',
      url: '/api/session',
      payload: { token: tokens.bob },
      remoteAddress: from,
      headers: { 'sec-fetch-site': 'same-origin' },
    });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    expect((await call({ method: 'GET', url: '/api/orgs', headers: bearer, remoteAddress: from })).statusCode).toBe(200);
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=500', headers: bearer })).json();
    const refusals = records.filter((r: { action: string; from: string }) => r.action.startsWith('session.') && r.from === from).reverse();
    expect(refusals.map((r: { action: string }) => r.action)).toEqual([
      ...Array(10).fill('session.fail'),
      'session.throttled',
      'session.create',
    ]);
    expect(refusals[0]).toMatchObject({
      actor: 'anonymous',
      target: 'admin-token:ab12ab12ab12',
      detail: { reason: 'unknown_token', tokenId: 'ab12ab12ab12', refusals: 1 },
    });
    expect(refusals[10]).toMatchObject({ detail: { refusals: 11, until: expect.any(String) } });
    expect(JSON.stringify(refusals)).not.toContain('wrong-');
    expect(JSON.stringify(refusals)).not.toContain('x'.repeat(43));
  });

  it('names whose token was tried: a wrong secret for a real token id is counted against that token from any address', async () => {
    const id = tokens.vera!.split('_')[1]!;
    const wrong = `ctga_${id}_${'y'.repeat(43)}`;
    for (let i = 0; i < 11; i += 1)
      await call({ method: 'GET', url: '/api/orgs', headers: { authorization: `Bearer ${wrong}` }, remoteAddress: `10.67.0.${i}` });
    expectProblem(
      await call({ method: 'GET', url: '/api/orgs', headers: { authorization: `Bearer ${wrong}` }, remoteAddress: '10.67.1.1' }),
      429,
      'too_many_sign_in_attempts',
    );
    expect((await call({ method: 'GET', url: '/api/orgs', headers: bearerOf('vera'), remoteAddress: '10.67.1.1' })).statusCode).toBe(200);
    const { records } = (await call({ method: 'GET', url: `/api/audit?target=admin:vera&limit=20`, headers: bearer })).json();
    expect(records[0]).toMatchObject({ action: 'session.throttled', target: 'admin:vera', detail: { tokenId: id } });
  });

  it('records role refusals and CSRF rejections with who, which operation and why; bounded per administrator', async () => {
    expectProblem(
      await call({ method: 'POST', url: '/api/orgs', payload: { id: 'by-vera' }, headers: bearerOf('vera') }),
      403,
      'admin_forbidden',
    );
    const { cookie } = await signIn('bob');
    expectProblem(
      await call({ method: 'POST', url: '/api/orgs', payload: { id: 'no-csrf' }, headers: { cookie, 'sec-fetch-site': 'same-origin' } }),
      403,
      'csrf_rejected',
    );
    expectProblem(
      await call({
        method: 'POST',
        url: '/api/session',
        payload: { token: TOKEN },
        headers: { origin: 'https://evil.example' },
        remoteAddress: '10.68.0.1',
      }),
      403,
      'csrf_rejected',
    );
    const { records } = (await call({ method: 'GET', url: '/api/audit?action=access.&limit=3', headers: bearer })).json();
    expect(records.map((r: Record<string, unknown>) => [r.actor, r.action, r.target, r.detail])).toEqual([
      ['anonymous', 'access.csrf_rejected', 'api:createSession', { method: 'POST', reason: 'origin', refusals: 1 }],
      ['admin:bob', 'access.csrf_rejected', 'api:createOrg', { method: 'POST', reason: 'csrf_token', refusals: 1 }],
      [
        'admin:vera',
        'access.forbidden',
        'api:createOrg',
        { method: 'POST', needed: 'operator', role: 'viewer', refusals: expect.any(Number) },
      ],
    ]);
    // 40 more refusals from one administrator add 10 + 1 + 2 records (past the tenth, at 16 and 32), not 40.
    const before = (await call({ method: 'GET', url: '/api/audit?limit=1', headers: bearer })).json().head.seq;
    for (let i = 0; i < 40; i += 1) await call({ method: 'GET', url: '/api/admins', headers: bearerOf('mallory') });
    const after = (await call({ method: 'GET', url: '/api/audit?limit=1', headers: bearer })).json().head.seq;
    expect(after - before).toBe(13);
  });

  it('ends a session at its absolute lifetime however much it is used; the cookie lives no longer', async () => {
    const short = buildAdminServer({
      ops: createOperations(deps),
      config,
      stores: deps,
      sessionLifetimes: { idleMs: 3_600_000, maxMs: 7_200_000 },
      trustedProxies: [],
      oidc: null,
      logLevel: 'silent',
    });
    try {
      const { cookie, setCookie } = await signIn('bob', {}, short);
      expect(setCookie).toMatch(/Max-Age=7200$/);
      const start = clock;
      for (const minutes of [30, 60, 90, 119]) {
        clock = start + minutes * 60_000;
        expect((await short.inject({ method: 'GET', url: '/api/session', headers: { cookie } })).statusCode, `${minutes} min`).toBe(200);
      }
      clock = start + 120 * 60_000;
      expectProblem(await short.inject({ method: 'GET', url: '/api/session', headers: { cookie } }), 401, 'admin_unauthorized');
      clock = start;
      expectProblem(await short.inject({ method: 'GET', url: '/api/session', headers: { cookie } }), 401, 'admin_unauthorized');
    } finally {
      await short.close();
    }
  });

  it('takes the client address from X-Forwarded-For only when the peer is a trusted proxy', async () => {
    const proxied = build(['10.1.0.0/16']);
    try {
      const headers = { ...bearer, 'x-forwarded-for': '203.0.113.9', 'sec-fetch-site': 'same-origin' };
      await proxied.inject({ method: 'POST', url: '/api/orgs', payload: { id: 'via-proxy' }, headers, remoteAddress: '10.1.2.3' });
      await proxied.inject({ method: 'POST', url: '/api/orgs', payload: { id: 'via-spoof' }, headers, remoteAddress: '198.51.100.7' });
    } finally {
      await proxied.close();
    }
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=2', headers: bearer })).json();
    expect(records.map((r: { target: string; from: string }) => `${r.target} ${r.from}`)).toEqual([
      'org:via-spoof 198.51.100.7',
      'org:via-proxy 203.0.113.9',
    ]);
  });
});

describe('admin API: roles', () => {
  it('a viewer reads but changes nothing; an operator changes organizations and keys but not administrators', async () => {
    expect((await call({ method: 'GET', url: '/api/orgs', headers: bearerOf('vera') })).statusCode).toBe(200);
    const denied = expectProblem(
      await call({ method: 'POST', url: '/api/orgs', payload: { id: 'by-viewer' }, headers: bearerOf('vera') }),
      403,
      'admin_forbidden',
    );
    expect(denied.detail).toBe('this needs the operator role; vera is a viewer');
    expect((await call({ method: 'POST', url: '/api/orgs', payload: { id: 'by-operator' }, headers: bearerOf('bob') })).statusCode).toBe(
      201,
    );
    expectProblem(await call({ method: 'GET', url: '/api/admins', headers: bearerOf('bob') }), 403, 'admin_forbidden');
    expectProblem(
      await call({ method: 'POST', url: '/api/admins', payload: { name: 'eve', role: 'owner' }, headers: bearerOf('bob') }),
      403,
      'admin_forbidden',
    );
  });

  it('an owner adds administrators and tokens (shown once, stored hashed), revokes tokens, demotes and disables; never the last owner', async () => {
    const made = await call({
      method: 'POST',
      url: '/api/admins',
      payload: { name: 'dana@hospital.example', role: 'viewer' },
      headers: bearer,
    });
    expect(made.statusCode, made.body).toBe(201);
    const token = (await call({ method: 'POST', url: '/api/admins/dana@hospital.example/tokens', headers: bearer })).json();
    expect(token).toMatchObject({
      admin: 'dana@hospital.example',
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      token: expect.stringMatching(/^ctga_[0-9a-f]{12}_[\w-]{43}$/),
    });
    const dana = { authorization: `Bearer ${token.token}` };
    expect((await call({ method: 'GET', url: '/api/orgs', headers: dana })).statusCode).toBe(200);
    const listed = (await call({ method: 'GET', url: '/api/admins', headers: bearer }))
      .json()
      .admins.find((a: { name: string }) => a.name === 'dana@hospital.example');
    expect(listed).toMatchObject({
      role: 'viewer',
      disabled: false,
      createdBy: 'admin:alice',
      tokens: [{ id: token.id, lastUsedAt: expect.any(String) }],
    });
    expect(
      (await call({ method: 'PATCH', url: '/api/admins/dana@hospital.example', payload: { role: 'operator' }, headers: bearer })).json(),
    ).toMatchObject({ role: 'operator' });
    expect((await call({ method: 'POST', url: '/api/orgs', payload: { id: 'by-dana' }, headers: dana })).statusCode).toBe(201);
    await call({ method: 'PATCH', url: '/api/admins/dana@hospital.example', payload: { disabled: true }, headers: bearer });
    expectProblem(await call({ method: 'GET', url: '/api/orgs', headers: dana }), 401, 'admin_unauthorized');
    await call({ method: 'PATCH', url: '/api/admins/dana@hospital.example', payload: { disabled: false }, headers: bearer });
    expect((await call({ method: 'DELETE', url: `/api/admins/dana@hospital.example/tokens/${token.id}`, headers: bearer })).json()).toEqual(
      { admin: 'dana@hospital.example', id: token.id, revoked: true },
    );
    expectProblem(await call({ method: 'GET', url: '/api/orgs', headers: dana }), 401, 'admin_unauthorized');
    expectProblem(
      await call({ method: 'PATCH', url: '/api/admins/alice', payload: { role: 'operator' }, headers: bearer }),
      409,
      'conflict',
    );
    expectProblem(await call({ method: 'PATCH', url: '/api/admins/alice', payload: { disabled: true }, headers: bearer }), 409, 'conflict');
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const stored = [];
      for (const key of await redis.keys(`${prefix}admin:*`))
        if ((await redis.type(key)) === 'hash') stored.push(JSON.stringify(await redis.hgetall(key)));
      // The secret is base64url, which may itself hold '_': everything after `ctga_<id>_`.
      const secret = token.token.slice(`ctga_${token.id}_`.length);
      expect(secret).toHaveLength(43);
      expect(stored.join('\n')).not.toContain(secret);
    } finally {
      redis.disconnect();
    }
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=8', headers: bearer })).json();
    expect(records.map((r: { actor: string; action: string }) => `${r.actor} ${r.action}`)).toContain('admin:alice admin.token.revoke');
    expect(records.map((r: { actor: string; action: string }) => `${r.actor} ${r.action}`)).toContain(
      'admin:dana@hospital.example org.create',
    );
  });

  it('a demotion reaches a signed-in session at its next request', async () => {
    const { cookie, csrf } = await signIn('mallory');
    const create = (id: string) =>
      call({
        method: 'POST',
        url: '/api/orgs',
        payload: { id },
        headers: { cookie, 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' },
      });
    expect((await create('mallory-1')).statusCode).toBe(201);
    await call({ method: 'PATCH', url: '/api/admins/mallory', payload: { role: 'viewer' }, headers: bearer });
    expectProblem(await create('mallory-2'), 403, 'admin_forbidden');
  });
});

describe('admin API: CSRF', () => {
  it('a session needs its CSRF token and a same-origin request to change anything; reads need neither', async () => {
    const { cookie, csrf } = await signIn();
    const create = (headers: Record<string, string>, id: string) =>
      call({ method: 'POST', url: '/api/orgs', payload: { id }, headers: { cookie, ...headers } });
    expectProblem(await create({}, 'csrf-a'), 403, 'csrf_rejected');
    expectProblem(await create({ 'x-csrf-token': 'not-the-token' }, 'csrf-b'), 403, 'csrf_rejected');
    expectProblem(await create({ 'x-csrf-token': csrf, 'sec-fetch-site': 'cross-site' }, 'csrf-c'), 403, 'csrf_rejected');
    expectProblem(
      await create({ 'x-csrf-token': csrf, origin: 'https://evil.example', host: 'localhost:80' }, 'csrf-d'),
      403,
      'csrf_rejected',
    );
    const other = await signIn('bob');
    expectProblem(await create({ 'x-csrf-token': other.csrf, 'sec-fetch-site': 'same-origin' }, 'csrf-e'), 403, 'csrf_rejected');
    expect((await create({ 'x-csrf-token': csrf, 'sec-fetch-site': 'same-origin' }, 'csrf-ok')).statusCode).toBe(201);
    expect((await call({ method: 'GET', url: '/api/orgs', headers: { cookie } })).statusCode).toBe(200);
    // None of the refused attempts created anything.
    const ids = (await call({ method: 'GET', url: '/api/orgs', headers: bearer })).json().orgs.map((o: { id: string }) => o.id);
    expect(ids.filter((id: string) => id.startsWith('csrf-'))).toEqual(['csrf-ok']);
  });

  it('a bearer client needs no CSRF token, but a browser request from another origin is refused', async () => {
    expect((await call({ method: 'POST', url: '/api/orgs', payload: { id: 'bearer-ok' }, headers: bearer })).statusCode).toBe(201);
    expectProblem(
      await call({ method: 'POST', url: '/api/orgs', payload: { id: 'bearer-x' }, headers: { ...bearer, 'sec-fetch-site': 'cross-site' } }),
      403,
      'csrf_rejected',
    );
  });
});

describe('admin API: input rules and problem bodies', () => {
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    call({ method: 'POST', url, payload: payload as never, headers: { ...bearer, ...headers } });

  it('names the field that breaks a rule', async () => {
    expect(expectProblem(await post('/api/orgs', { id: 'bad:id' }), 400, 'invalid_body').detail).toMatch(/^id: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', rpm: -1 }), 400, 'invalid_body').detail).toMatch(/^rpm: /);
    expect(expectProblem(await post('/api/orgs', { id: 'x', models: ['bad model'] }), 400, 'invalid_body').detail).toMatch(
      /^models\[0\]: /,
    );
    expect(expectProblem(await post('/api/orgs', { id: 'x', endpoints: ['chat'] }), 400, 'invalid_body').detail).toMatch(
      /^endpoints\[0\]: /,
    );
    expect(expectProblem(await post('/api/orgs', { id: 'x', colour: 'red' }), 400, 'invalid_body').detail).toBe(
      'colour: is not a known field',
    );
    expect(expectProblem(await post('/api/orgs', {}), 400, 'invalid_body').detail).toBe('id: is required');
    expect(expectProblem(await post('/api/orgs', { id: 'x', name: 'tab\there' }), 400, 'invalid_body').detail).toMatch(
      /^name: .*control characters/,
    );
    expectProblem(await post('/api/orgs', 'id=x', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_body');
    expectProblem(await post('/api/orgs', '{"id":', { 'content-type': 'application/json' }), 400, 'invalid_body');
    expectProblem(await post('/api/orgs', { id: 'x', name: 'n'.repeat(70_000) }), 413, 'payload_too_large');
    await post('/api/orgs', { id: 'rules' });
    expect(expectProblem(await post('/api/orgs/rules/keys', { expiresAt: 'tomorrow' }), 400, 'invalid_body').detail).toMatch(
      /^expiresAt: /,
    );
    expect(
      expectProblem(await call({ method: 'GET', url: '/api/orgs/rules/usage?days=0', headers: bearer }), 400, 'invalid_body').detail,
    ).toMatch(/^days: /);
    expect(
      expectProblem(await call({ method: 'GET', url: '/api/usage/export?format=xml', headers: bearer }), 400, 'invalid_body').detail,
    ).toMatch(/^format: /);
    expect(
      expectProblem(
        await call({
          method: 'GET',
          url: '/api/usage/export?format=csv&since=2031-01-02T00:00:00Z&until=2031-01-01T00:00:00Z',
          headers: bearer,
        }),
        400,
        'invalid_body',
      ).detail,
    ).toBe('since: must not be after until');
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
    const dead = openAdminDeps({ ...open, redisUrl: 'redis://127.0.0.1:1', redisTimeoutMs: 200 });
    const offline = buildAdminServer({
      ops: createOperations(dead.deps),
      config,
      stores: dead.deps,
      sessionLifetimes: { idleMs: 60_000, maxMs: 43_200_000 },
      trustedProxies: [],
      oidc: null,
      logLevel: 'silent',
    });
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
    const created = (
      await call({ method: 'POST', url: '/api/orgs', payload: { id: 'clinic', name: 'St. Elsewhere', rpm: 60 }, headers: bearer })
    ).json();
    expect(created).toMatchObject({
      id: 'clinic',
      name: 'St. Elsewhere',
      models: [TEST_MODEL],
      rpm: 60,
      rpmIsDefault: false,
      tpm: 1_000_000,
      tpmIsDefault: true,
    });
    const patch = (payload: unknown) => call({ method: 'PATCH', url: '/api/orgs/clinic', payload: payload as never, headers: bearer });
    expect((await patch({ name: 'Clinic North', models: [], rpm: null, tpm: 5000 })).json()).toMatchObject({
      name: 'Clinic North',
      models: [],
      rpm: 600,
      rpmIsDefault: true,
      tpm: 5000,
    });
    const key = (await call({ method: 'POST', url: '/api/orgs/clinic/keys', payload: { name: 'etl' }, headers: bearer })).json();
    expect(await verdict(key.key)).toBe('no model');
    await patch({ models: [TEST_MODEL] });
    expect(await verdict(key.key)).toBe('ok');
    expect((await call({ method: 'GET', url: '/api/orgs/clinic', headers: bearer })).json()).toMatchObject({
      name: 'Clinic North',
      keys: 1,
    });
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
    expectProblem(
      await call({ method: 'POST', url: `/api/keys/${old.id}/rotate`, payload: { overlapSeconds: 60 }, headers: bearer }),
      409,
      'conflict',
    );
    expectProblem(
      await call({ method: 'POST', url: `/api/keys/${fresh.id}/rotate`, payload: { overlapSeconds: 31 * 86_400 }, headers: bearer }),
      400,
      'invalid_body',
    );
  });

  it('renames a key, changes its expiry, revokes it; lists keys without secrets', async () => {
    const key = (await call({ method: 'POST', url: '/api/orgs/clinic/keys', payload: { name: 'temp' }, headers: bearer })).json();
    const later = new Date(clock + 86_400_000).toISOString();
    expect(
      (await call({ method: 'PATCH', url: `/api/keys/${key.id}`, payload: { name: 'renamed', expiresAt: later }, headers: bearer })).json(),
    ).toMatchObject({ name: 'renamed', expiresAt: later });
    expect((await call({ method: 'POST', url: `/api/keys/${key.id}/revoke`, headers: bearer })).json()).toMatchObject({
      status: 'revoked',
    });
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
    const use = (keyId: string, tokens: number, time: number) =>
      seedUsage(prefix, { org: 'charted', keyId, model: TEST_MODEL, requestId: 'r', tokens, time });
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
    const bob = await signIn('bob');
    const created = await call({
      method: 'POST',
      url: '/api/orgs/rules/keys',
      payload: { name: 'audited' },
      headers: { cookie: bob.cookie, 'x-csrf-token': bob.csrf, 'sec-fetch-site': 'same-origin' },
    });
    const secret = created.json().key.split('_')[2];
    const { records, head } = (await call({ method: 'GET', url: '/api/audit?limit=5', headers: bearer })).json();
    expect(records[0]).toMatchObject({
      seq: head.seq,
      hash: head.hash,
      actor: 'admin:bob',
      action: 'key.create',
      target: `key:${created.json().id}`,
      from: '127.0.0.1',
      detail: { org: 'rules', name: 'audited' },
    });
    expect(records[1]).toMatchObject({ actor: 'admin:bob', action: 'session.create', detail: { via: 'token' } });
    expect(records[0].prevHash).toBe(records[1].hash);
    expect((await call({ method: 'GET', url: '/api/audit/verify', headers: bearer })).json()).toMatchObject({
      ok: true,
      records: head.seq,
      head,
    });
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
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="usage-clinic-start-to-\d{8}T\d{6}Z\.csv"$/);
    expect(csv.body.split('\n')[0]).toBe('time,org,key_id,model,request_id,tokens');
    const jsonl = await call({ method: 'GET', url: '/api/usage/export?format=jsonl', headers: bearer });
    expect(jsonl.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=2', headers: bearer })).json();
    expect(records.map((r: { action: string; target: string }) => `${r.action} ${r.target}`)).toEqual([
      'usage.export usage',
      'usage.export org:clinic',
    ]);
  });

  it('exports billing per UTC day and month, per organization and key with their names, sorted, matching the usage API exactly', async () => {
    clock = Date.now();
    const day = 86_400_000;
    const iso = (offset: number) => new Date(clock + offset * day).toISOString().slice(0, 10);
    await call({ method: 'POST', url: '/api/orgs', payload: { id: 'billed', name: 'Billing, Clinic "North"' }, headers: bearer });
    const made = async (name: string) =>
      (await call({ method: 'POST', url: '/api/orgs/billed/keys', payload: { name }, headers: bearer })).json().id as string;
    const [alpha, beta] = [await made('alpha'), await made('beta')];
    let n = 0;
    const use = (keyId: string, tokens: number, offset: number) => {
      n += 1;
      return seedUsage(prefix, {
        org: 'billed',
        keyId,
        model: TEST_MODEL,
        requestId: `b${n}`,
        tokens,
        time: clock + offset * day,
      });
    };
    await use(beta, 5, 0);
    await use(alpha, 10, 0);
    await use(alpha, 11, -1);
    await use(beta, 7, -2);
    await use(beta, 8, -2);
    const q = `org=billed&since=${iso(-2)}&until=${iso(0)}`;
    const json = (await call({ method: 'GET', url: `/api/usage/billing?format=json&period=day&${q}`, headers: bearer })).json();
    expect(json.rows.map((r: Record<string, unknown>) => [r.period, r.keyName, r.requests, r.tokens])).toEqual([
      [iso(-2), 'beta', 2, 15],
      [iso(-1), 'alpha', 1, 11],
      [iso(0), alpha < beta ? 'alpha' : 'beta', 1, alpha < beta ? 10 : 5],
      [iso(0), alpha < beta ? 'beta' : 'alpha', 1, alpha < beta ? 5 : 10],
    ]);
    expect(json.rows[0]).toMatchObject({ org: 'billed', orgName: 'Billing, Clinic "North"', kind: 'online', model: TEST_MODEL });
    // The usage API, asked in the same time format (ISO date-times are accepted there now), says the same.
    const series = (
      await call({ method: 'GET', url: `/api/orgs/billed/usage?since=${iso(-2)}T00:00:00Z&until=${iso(0)}T23:59:59Z`, headers: bearer })
    ).json();
    for (const point of series.days) {
      const rows = json.rows.filter((r: { period: string }) => r.period === point.day);
      expect({
        requests: rows.reduce((a: number, r: { requests: number }) => a + r.requests, 0),
        tokens: rows.reduce((a: number, r: { tokens: number }) => a + r.tokens, 0),
      }).toEqual({
        requests: point.requests,
        tokens: point.tokens,
      });
    }
    for (const key of series.keys)
      for (const point of key.days) {
        const row = json.rows.find((r: { period: string; keyId: string }) => r.period === point.day && r.keyId === key.keyId);
        expect({ requests: row?.requests ?? 0, tokens: row?.tokens ?? 0 }).toEqual({ requests: point.requests, tokens: point.tokens });
      }
    const csv = await call({ method: 'GET', url: `/api/usage/billing?period=month&${q}`, headers: bearer });
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="billing-billed-month-${iso(-2)}-to-${iso(0)}.csv"`);
    const lines = csv.body.trim().split('\n');
    expect(lines[0]).toBe('period,org,org_name,key_id,key_name,kind,model,requests,tokens');
    const months = new Map<string, number>();
    for (const r of json.rows)
      months.set(`${r.period.slice(0, 7)} ${r.keyName}`, (months.get(`${r.period.slice(0, 7)} ${r.keyName}`) ?? 0) + r.tokens);
    expect(lines.slice(1).map((line) => line.split(',').slice(0, 3).join(','))).toEqual(
      lines.slice(1).map(() => expect.stringMatching(/^\d{4}-\d{2},billed,"Billing/)),
    );
    expect(
      lines
        .slice(1)
        .map((line) => {
          const cells = line.split(',');
          return `${cells[0]} ${cells[5]}:${cells.at(-1)}`;
        })
        .sort(),
    ).toEqual([...months.entries()].map(([k, v]) => `${k}:${v}`).sort());
    expect(
      expectProblem(await call({ method: 'GET', url: '/api/usage/billing?period=week', headers: bearer }), 400, 'invalid_body').detail,
    ).toMatch(/^period: /);
    const { records } = (await call({ method: 'GET', url: '/api/audit?limit=1', headers: bearer })).json();
    expect(records[0]).toMatchObject({ action: 'usage.billing', target: 'org:billed', detail: { format: 'csv', period: 'month' } });
  });

  it('names an audit export for its filter, and publishes the public key without sign-in', async () => {
    const filtered = await call({ method: 'GET', url: '/api/audit/export?format=jsonl&action=key.&actor=bob', headers: bearer });
    expect(filtered.headers['content-disposition']).toMatch(
      /^attachment; filename="audit-action-key.-actor-bob-start-to-\d{8}T\d{6}Z\.jsonl"$/,
    );
    const key = await call({ method: 'GET', url: '/api/audit/public-key' });
    expect(key.statusCode).toBe(200);
    expect(key.json()).toEqual({
      trail: prefix,
      publicKey: expect.stringMatching(/^-----BEGIN PUBLIC KEY-----\n/),
      fingerprint: expect.stringMatching(/^sha256:/),
    });
    const header = JSON.parse(filtered.body.split('\n')[0]!);
    expect(header).toMatchObject({ publicKey: key.json().publicKey, filter: { action: 'key.', actor: 'bob', target: null } });
  });
});
