/**
 * The new-key budget (ENVOY_NEW_KEY_RPS, envoy/new-keys.ts) in the whole gateway: real Envoy over
 * TLS, authz, the embedder on the test model, Redis. At 2 Checks a second for keys Envoy has not
 * seen authz accept (bursts of 4), a stream of junk keys is refused with 503
 * authorization_unavailable and retry-after before authz is asked (one client address may take
 * 2/5 of it, so another address keeps the rest), while a key already in use
 * passes every time; a new key waits for the budget once and is then known; a revoked key is
 * forgotten on its 401; `/health` and the 404 route spend nothing. The known key's requests go on
 * one HTTP/2 connection, so on one Envoy worker (each worker learns keys of its own).
 */
import type { ClientHttp2Session } from 'node:http2';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { junkKey } from '../../bench/open-loop.js';
import { NEW_KEY_HEADER, newKeyLimit, newKeyRpsPerSource, ROUTES_WITHOUT_AUTHZ } from '../../envoy/new-keys.js';
import { renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';
import { openSession, post, tally, type BurstAnswer } from '../pressure/burst.js';
import { expectProblemBody } from '../support/problem-assert.js';
import type { GatewayResponse } from '../support/stack-client.js';
import { waitFor } from '../support/process.js';
import { orgWithKey, revokeKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

const RPS = 2;
let stack: Stack;
let session: ClientHttp2Session;
let body: string;

/** Sends junk keys one by one until the budget refuses one: it is empty now (for up to a second). */
async function drainBudget(): Promise<BurstAnswer[]> {
  const answers: BurstAnswer[] = [];
  for (let i = 0; i < 40; i += 1) {
    const answer = await post(session, junkKey(), body);
    answers.push(answer);
    if (answer.status === 503) return answers;
  }
  throw new Error(`the budget never refused a junk key: ${JSON.stringify(tally(answers))}`);
}

/** `count` requests with `key` and as many junk ones, all at once on the one session. */
async function beside(key: string, count: number): Promise<{ key: BurstAnswer[]; junk: BurstAnswer[] }> {
  const junk = Array.from({ length: count }, () => post(session, junkKey(), body));
  const mine = Array.from({ length: count }, () => post(session, key, body));
  return { key: await Promise.all(mine), junk: await Promise.all(junk) };
}

/** One POST /v1/embeddings with `key` from `localAddress`, on a connection of its own (HTTP/1.1). */
function statusFrom(localAddress: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: stack.ports.gateway,
        servername: 'localhost',
        ca: stack.ca,
        localAddress,
        agent: false,
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'), { newKeyRps: RPS });
  body = JSON.stringify({ model: stack.svc.modelId, input: 'Patient reports mild headache since Tuesday.' });
  session = await openSession(stack);
}, 120_000);

afterAll(async () => {
  session?.close();
  await stack?.stop();
});

describe(`the new-key budget at ${RPS}/s`, () => {
  it('refuses junk keys past it with 503 and retry-after before authz, while a key in use passes every time', async () => {
    const known = orgWithKey(stack, 'known', { rpm: 100_000 });
    // Its first request spends one token of the budget; from then on this worker knows it.
    expect((await post(session, known.key, body)).status).toBe(200);
    const drained = await drainBudget();
    // Authz answered the first few (401); the budget refused the rest without asking it.
    expect(tally(drained.slice(0, -1))).toEqual({ '401 invalid_api_key': drained.length - 1 });
    expect(drained.length - 1).toBeLessThanOrEqual(2 * RPS + RPS);
    const refused = drained.at(-1)!;
    expect(refused).toMatchObject({ status: 503, code: 'authorization_unavailable', retryAfter: '1' });

    const round = await beside(known.key, 20);
    expect(tally(round.key)).toEqual({ '200': 20 });
    // Twenty junk keys at once: at most the refill (a second or two of it) reached authz.
    expect(round.junk.filter((a) => a.status === 503).length).toBeGreaterThanOrEqual(20 - 3 * RPS);
  });

  it('answers the refusal with the catalogue problem body', async () => {
    // On a connection of its own, perhaps another worker: a junk key is new to every worker. The
    // budget's one-second refill may come between the drain and the request, so a few tries.
    let refused: GatewayResponse | undefined;
    for (let i = 0; i < 5 && refused === undefined; i += 1) {
      await drainBudget();
      const res = await stack.request({
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer ${junkKey()}`, 'content-type': 'application/json' },
        body,
      });
      if (res.status !== 401) refused = res;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.headers['retry-after']).toBe('1');
    expectProblemBody(refused?.json(), 'authorization_unavailable');
  });

  it('makes a new key wait for the budget once; then it is known', async () => {
    const fresh = orgWithKey(stack, 'fresh', { rpm: 100_000 });
    await drainBudget();
    const first = await Promise.all(Array.from({ length: 2 * RPS + 2 }, () => post(session, fresh.key, body)));
    // At most a refill's worth passed; the rest waited with a retry-after like any new key.
    expect(first.filter((a) => a.status === 503 && a.code === 'authorization_unavailable').length).toBeGreaterThanOrEqual(2);
    // A client retrying after retry-after gets in, and its key is known from then on.
    await waitFor('the fresh key to be served', async () => (await post(session, fresh.key, body)).status === 200, 10_000);
    const round = await beside(fresh.key, 10);
    expect(tally(round.key)).toEqual({ '200': 10 });
  });

  it('forgets a key on its 401, so a revoked key is a new key again', async () => {
    const revoked = orgWithKey(stack, 'revoked', { rpm: 100_000 });
    // A new key: the test before this one may have left the budget empty, so it may wait once.
    await waitFor('the new key to be served', async () => (await post(session, revoked.key, body)).status === 200, 10_000);
    revokeKey(stack, revoked.id);
    // Known until authz says 401 (its key cache may answer from memory for a moment).
    await waitFor('the revoked key to get 401', async () => (await post(session, revoked.key, body)).status === 401, 15_000);
    await drainBudget();
    const after = await Promise.all(Array.from({ length: 2 * RPS + 2 }, () => post(session, revoked.key, body)));
    expect(after.every((a) => a.status === 401 || a.status === 503)).toBe(true);
    expect(after.filter((a) => a.status === 503).length).toBeGreaterThanOrEqual(2);
  });

  it('leaves another client address its share: one address takes at most 2/5 of the budget', async () => {
    expect(newKeyRpsPerSource(RPS)).toBe(1);
    expect(newKeyRpsPerSource(25)).toBe(10);
    await drainBudget();
    // 127.0.0.1's share is spent; the whole Envoy's is not, so a junk key from elsewhere still
    // reaches authz (and gets its 401) instead of the budget's 503.
    expect(await statusFrom('127.0.0.2', junkKey())).toBe(401);
  });

  it('spends nothing on routes where authz is not asked: /health and the 404', async () => {
    await drainBudget();
    const junk = { authorization: `Bearer ${junkKey()}` };
    for (let i = 0; i < 5; i += 1) {
      expect((await stack.request({ path: '/health', headers: junk, http2: true })).status).toBe(200);
      expect((await stack.request({ path: '/v1/nothing-here', headers: junk, http2: true })).status).toBe(404);
    }
  });
});

describe('the rendered filters', () => {
  const base = { TLS_CERT_FILE: join(repoRoot, 'package.json'), TLS_KEY_FILE: join(repoRoot, 'package.json') };
  const bootstrap = (env: Record<string, string>) => parse(renderEnvoyConfig(settingsFromEnv(env)));
  const hcm = (config: any) => config.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;

  it('sit just before ext_authz by default, and are absent at 0', () => {
    const names = (env: Record<string, string>) => hcm(bootstrap(env)).http_filters.map((f: { name: string }) => f.name);
    const shipped = names(base);
    expect(shipped.slice(shipped.indexOf('envoy.filters.http.ext_authz') - 2, shipped.indexOf('envoy.filters.http.ext_authz'))).toEqual([
      'known_keys',
      'new_keys',
    ]);
    expect(names({ ...base, ENVOY_NEW_KEY_RPS: '0' })).not.toContain('known_keys');
    expect(newKeyLimit(0)).toBe('');
    expect(() => settingsFromEnv({ ...base, ENVOY_NEW_KEY_RPS: '-3' })).toThrow(/ENVOY_NEW_KEY_RPS/);
  });

  it('skip exactly the routes where ext_authz is off, and mark requests with a header clients cannot send', () => {
    const routes = hcm(bootstrap(base)).route_config.virtual_hosts[0].routes as Array<{
      name: string;
      typed_per_filter_config?: Record<string, { disabled?: boolean }>;
    }>;
    const withoutAuthz = routes.filter((r) => r.typed_per_filter_config?.['envoy.filters.http.ext_authz']?.disabled).map((r) => r.name);
    expect([...ROUTES_WITHOUT_AUTHZ].sort()).toEqual(withoutAuthz.sort());
    // header_mutation removes every client-sent x-gateway-* header before the Lua filter runs.
    expect(NEW_KEY_HEADER.startsWith('x-gateway-')).toBe(true);
  });
});
