/**
 * Single sign-on through a real OpenID Connect provider (the oidc-provider package, listening on
 * a port of its own) and the real admin server (listening, with openid-client doing discovery,
 * PKCE, state, nonce and the code exchange). A small cookie-keeping client (test/support/oidc-walker.ts)
 * walks the redirects and submits the provider's own login and consent forms, as a browser would. A registered
 * administrator is signed in as themself; a stranger, an unverified e-mail and a replayed
 * callback are refused, audited, and never signed in.
 */
import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { createOperations, type Operations } from '../../admin/src/operations/operations.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { OidcWalker } from '../support/oidc-walker.js';
import { freePort } from '../support/process.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const CLIENT = { id: 'gateway-console', secret: 'console-client-secret-for-tests-0123456789' };
const prefix = testPrefix();
let providerServer: Server;
let admin: FastifyInstance;
let connection: Connection;
let deps: AdminDeps;
let ops: Operations;
let adminUrl = '';

beforeAll(async () => {
  const [providerPort, adminPort] = [await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${providerPort}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        redirect_uris: [`${adminUrl}/api/oidc/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // The login form's "login" is the account; "unverified:<address>" has an unverified e-mail.
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({ sub: id, email: id.replace(/^unverified:/, ''), email_verified: !id.startsWith('unverified:') }),
    }),
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
  });
  providerServer = provider.listen(providerPort, '127.0.0.1');
  ({ deps, connection } = openAdminDeps({
    modelId: TEST_MODEL,
    defaultRpm: 600,
    defaultTpm: 1000,
    keyPrefix: 'CTG',
    keyHashSecret: TEST_SECRET,
    redisUrl: TEST_REDIS_URL,
    redisKeyPrefix: prefix,
    redisTimeoutMs: 2000,
    auditSecret: 'admin-oidc-tests-audit-secret-0123456789ab',
    auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'admin-oidc-')), 'anchor.jsonl'),
  }));
  await connection.ready();
  ops = createOperations(deps);
  await ops.createAdmin({ name: 'dana@hospital.example', role: 'operator' }, { actor: 'cli:test', from: 'cli@test' });
  admin = buildAdminServer({
    ops,
    config: { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET },
    stores: deps,
    sessionLifetimes: { idleMs: 600_000, maxMs: 43_200_000 },
    trustedProxies: [],
    oidc: { issuer, clientId: CLIENT.id, clientSecret: CLIENT.secret, publicUrl: adminUrl },
    logLevel: 'silent',
  });
  await admin.listen({ host: '127.0.0.1', port: adminPort });
});

afterAll(async () => {
  await admin?.close();
  await new Promise((resolve) => providerServer?.close(resolve));
  await connection?.purge();
  await connection?.close();
});

async function sessionOf(walker: OidcWalker): Promise<Response> {
  return fetch(`${adminUrl}/api/session`, { headers: { cookie: `ctg_admin=${walker.cookie(adminUrl, 'ctg_admin') ?? ''}` } });
}

describe('single sign-on through OpenID Connect', () => {
  it('says single sign-on is offered', async () => {
    expect(await (await fetch(`${adminUrl}/api/sign-in-options`)).json()).toEqual({ oidc: true });
  });

  it('signs a registered administrator in as themself, with PKCE, and audits it', async () => {
    const walker = new OidcWalker(adminUrl);
    const landed = await walker.walk(`${adminUrl}/api/oidc/start`, 'Dana@Hospital.example');
    expect(landed.search).toBe('');
    const authorize = new URL(walker.visited.find((u) => u.includes('/auth?'))!);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${adminUrl}/api/oidc/callback`);
    const session = await sessionOf(walker);
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ actor: 'admin:dana@hospital.example', role: 'operator', via: 'oidc' });
    const [last] = (await ops.auditRecent(1)).records;
    expect(last).toMatchObject({
      actor: 'admin:dana@hospital.example',
      action: 'session.create',
      detail: { via: 'oidc' },
      from: '127.0.0.1',
    });
  });

  it('refuses a stranger and an unverified e-mail, audits both, and signs neither in', async () => {
    for (const [login, reason] of [
      ['stranger@elsewhere.example', 'not_an_administrator'],
      ['unverified:dana@hospital.example', 'no_verified_email'],
    ] as const) {
      const walker = new OidcWalker(adminUrl);
      const landed = await walker.walk(`${adminUrl}/api/oidc/start`, login);
      expect(landed.searchParams.get('sign_in_error')).toBe(reason);
      expect((await sessionOf(walker)).status).toBe(401);
      const [last] = (await ops.auditRecent(1)).records;
      // With the identity the provider answered with: who tried.
      const identity = login.replace(/^unverified:/, '').toLowerCase();
      expect(last).toMatchObject({
        actor: 'anonymous',
        action: 'session.fail',
        target: `oidc:${identity}`,
        detail: { reason: `oidc_${reason}`, identity },
      });
    }
  });

  it('refuses a replayed callback: the pending sign-in is used once', async () => {
    const walker = new OidcWalker(adminUrl);
    await walker.walk(`${adminUrl}/api/oidc/start`, 'dana@hospital.example');
    const callback = walker.visited.find((u) => u.startsWith(`${adminUrl}/api/oidc/callback`))!;
    const again = await fetch(callback, { redirect: 'manual' });
    expect(again.status).toBe(302);
    expect(again.headers.get('location')).toBe('/?sign_in_error=no_pending_sign_in');
  });

  it('never locks out a completed sign-in: past the refusal limit for its address, the administrator still signs in; refusals land on the console, never on a JSON page', async () => {
    // The refusals above came from this address too: 11 more put it past the limit whatever they were.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i += 1)
      statuses.push((await fetch(`${adminUrl}/api/orgs`, { headers: { authorization: `Bearer wrong-${i}` } })).status);
    expect(statuses.at(-1)).toBe(429);
    const walker = new OidcWalker(adminUrl);
    const landed = await walker.walk(`${adminUrl}/api/oidc/start`, 'dana@hospital.example');
    expect(landed.search).toBe('');
    expect((await sessionOf(walker)).status).toBe(200);
    const stranger = await new OidcWalker(adminUrl).walk(`${adminUrl}/api/oidc/start`, 'mallory@elsewhere.example');
    expect(stranger.searchParams.get('sign_in_error')).toBe('too_many_attempts');
    // Recorded once the address passed the limit, not once per attempt after that.
    const { records } = await ops.auditRecent(30);
    expect(records.filter((r) => r.action === 'session.throttled' && r.from === '127.0.0.1')).toHaveLength(1);
  });

  it('redirects to the console, not a JSON error, when the provider does not answer', async () => {
    const offline = buildAdminServer({
      ops,
      config: { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET },
      stores: deps,
      sessionLifetimes: { idleMs: 600_000, maxMs: 43_200_000 },
      trustedProxies: [],
      oidc: { issuer: 'http://127.0.0.1:1', clientId: CLIENT.id, clientSecret: CLIENT.secret, publicUrl: adminUrl },
      logLevel: 'silent',
    });
    try {
      const started = await offline.inject({ method: 'GET', url: '/api/oidc/start' });
      expect(started.statusCode).toBe(302);
      expect(started.headers.location).toBe('/?sign_in_error=provider_unavailable');
    } finally {
      await offline.close();
    }
  });
});
