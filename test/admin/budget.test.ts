/**
 * Monthly token budgets: the pure policy (thresholds, the hard stop, the UTC month), then the
 * real path: a budget set through the admin API, usage in the daily counters, a real authz
 * Check answering 429 rate_limit_exceeded with a detail naming the budget and retry-after until
 * the month ends (only with the hard stop), and the admin listener's /metrics counting it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import { budgetDecision, budgetState, monthDaysSoFar, nextMonthStart } from '../../contract/budget.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { addKey } from '../authz/fixtures.js';
import { recordUsage } from '../support/settlement.js';
import { fixedSecret } from '../../contract/secrets.js';

const METRICS_TOKEN = 'admin-budget-test-metrics-token-0123456789';

const MARCH_10 = Date.parse('2031-03-10T12:00:00Z');

describe('budget policy (pure)', () => {
  const budget = { monthlyTokens: 1000, hardStop: true, alertPercents: [50, 80, 100] };

  it('names the highest threshold crossed and when the month resets (UTC)', () => {
    expect(budgetState(budget, 499, MARCH_10)).toEqual({
      usedTokens: 499,
      percent: 49.9,
      alertPercent: null,
      exhausted: false,
      resetsAt: '2031-04-01T00:00:00.000Z',
    });
    expect(budgetState(budget, 850, MARCH_10)).toMatchObject({ percent: 85, alertPercent: 80, exhausted: false });
    expect(budgetState(budget, 1000, MARCH_10)).toMatchObject({ alertPercent: 100, exhausted: true });
    expect(new Date(nextMonthStart(Date.parse('2031-12-31T23:59:59Z'))).toISOString()).toBe('2032-01-01T00:00:00.000Z');
    expect(monthDaysSoFar(MARCH_10)).toHaveLength(10);
    expect(monthDaysSoFar(MARCH_10)[0]).toBe('2031-03-01');
  });

  it('stops only with a hard stop, once the budget is reached, until the month ends', () => {
    expect(budgetDecision(budget, 999, MARCH_10)).toBeNull();
    expect(budgetDecision({ ...budget, hardStop: false }, 5000, MARCH_10)).toBeNull();
    expect(budgetDecision(null, 5000, MARCH_10)).toBeNull();
    const deny = budgetDecision(budget, 1000, MARCH_10)!;
    expect(deny).toMatchObject({
      kind: 'deny',
      code: 'rate_limit_exceeded',
      retryAfterSeconds: (Date.parse('2031-04-01T00:00:00Z') - MARCH_10) / 1000,
    });
    expect(deny.detail).toBe(
      "The organization's monthly token budget (1000 tokens) is used up: 1000 tokens this month (UTC). It resets at 2031-04-01T00:00:00.000Z; an administrator can raise it.",
    );
  });
});

describe('budgets on the real path', () => {
  const prefix = testPrefix();
  let clock = MARCH_10;
  let authz: RunningAuthz;
  let deps: AdminDeps;
  let connection: Connection;
  let app: FastifyInstance;
  let token = '';
  const stores: RedisStore[] = [];
  const config = { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1_000_000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET };

  beforeAll(async () => {
    const gateStore = createStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
    stores.push(gateStore);
    authz = await startAuthz(testConfig(prefix), { clock: () => clock });
    ({ deps, connection } = openAdminDeps(
      {
        ...config,
        redisUrl: TEST_REDIS_URL,
        redisKeyPrefix: prefix,
        redisTimeoutMs: 2000,
        auditSecret: 'admin-budget-tests-audit-secret-0123456789',
        auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'admin-budget-')), 'anchor.jsonl'),
      },
      () => clock,
    ));
    await connection.ready();
    const ops = createOperations(deps);
    await ops.createAdmin({ name: 'olga', role: 'operator' }, { actor: 'cli:test', from: 'cli@test' });
    token = (await ops.createAdminToken('olga', { actor: 'cli:test', from: 'cli@test' })).token;
    app = buildAdminServer({
      ops,
      config,
      stores: deps,
      sessionLifetimes: { idleMs: 60_000, maxMs: 43_200_000 },
      trustedProxies: [],
      oidc: null,
      logLevel: 'silent',
      metricsToken: fixedSecret(METRICS_TOKEN),
    });
  });

  afterAll(async () => {
    await app.close();
    await authz.store.purge();
    await authz.stop();
    await connection.close();
    for (const store of stores) await store.close();
  });

  const api = (method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown) =>
    app.inject({ method, url, payload: payload as never, headers: { authorization: `Bearer ${token}` } });
  const use = (org: string, keyId: string, tokens: number, time: number, n: string) =>
    recordUsage(authz.store, { org, keyId, model: TEST_MODEL, requestId: n, tokens, time });

  it('answers 429 rate_limit_exceeded with the budget and retry-after once a hard-stop budget is used up; a soft one only alerts', async () => {
    for (const id of ['capped', 'soft']) expect((await api('POST', '/api/orgs', { id })).statusCode).toBe(201);
    const capped = await addKey(authz.store, 'capped');
    const soft = await addKey(authz.store, 'soft');
    const set = await api('PUT', '/api/orgs/capped/budget', { monthlyTokens: 100, hardStop: true, alertPercents: [100, 50] });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().budget).toMatchObject({
      org: 'capped',
      monthlyTokens: 100,
      hardStop: true,
      alertPercents: [50, 100],
      usedTokens: 0,
      alertPercent: null,
    });
    await api('PUT', '/api/orgs/soft/budget', { monthlyTokens: 100 });
    const check = async (key: string) => authz.check(envoyCheck({ authorization: `Bearer ${key}` }));
    expect((await check(capped.key)).http_response).toBe('ok_response');

    // Last month's usage does not count; this month's does.
    await use('capped', capped.id, 500, Date.parse('2031-02-27T10:00:00Z'), 'feb');
    await use('capped', capped.id, 60, Date.parse('2031-03-01T00:10:00Z'), 'm1');
    await use('capped', capped.id, 40, MARCH_10, 'm2');
    await use('soft', soft.id, 150, MARCH_10, 's1');
    // The Check reads the month's counter in the same round trip (settlement.lua): no lag.
    const refused = await check(capped.key);
    expect(refused.denied_response?.status?.code).toBe('TooManyRequests');
    const body = JSON.parse(refused.denied_response!.body);
    expect(body).toMatchObject({
      status: 429,
      code: 'rate_limit_exceeded',
      detail: expect.stringMatching(/^The organization's monthly token budget \(100 tokens\) is used up: 100 tokens this month/),
    });
    const headers = Object.fromEntries(refused.denied_response!.headers.map((h) => [h.header!.key, h.header!.value]));
    expect(Number(headers['retry-after'])).toBe((Date.parse('2031-04-01T00:00:00Z') - clock) / 1000);
    expect((await check(soft.key)).http_response).toBe('ok_response');

    const { budgets } = (await api('GET', '/api/budgets')).json();
    expect(
      budgets.map((b: { org: string; percent: number; alertPercent: number | null; exhausted: boolean }) => [
        b.org,
        b.percent,
        b.alertPercent,
        b.exhausted,
      ]),
    ).toEqual([
      ['soft', 150, 100, true],
      ['capped', 100, 100, true],
    ]);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metrics.body).toContain('ctg_budget_organizations{state="budgeted"} 2');
    expect(metrics.body).toContain('ctg_budget_organizations{state="alerting"} 2');
    expect(metrics.body).toContain('ctg_budget_organizations{state="exhausted"} 2');
    expect(metrics.body).not.toContain('capped');

    // Raising the budget lets the organization through again, at once.
    await api('PUT', '/api/orgs/capped/budget', { monthlyTokens: 1000, hardStop: true });
    expect((await check(capped.key)).http_response).toBe('ok_response');
    // A new month starts from zero.
    await api('PUT', '/api/orgs/capped/budget', { monthlyTokens: 100, hardStop: true });
    clock = Date.parse('2031-04-01T00:00:01Z');
    expect((await check(capped.key)).http_response).toBe('ok_response');
  });

  it('refuses bad budgets by field, removes one with null, and audits each change as the administrator', async () => {
    expect((await api('PUT', '/api/orgs/capped/budget', { monthlyTokens: -1 })).json()).toMatchObject({
      code: 'invalid_body',
      detail: expect.stringMatching(/^monthlyTokens/),
    });
    expect((await api('PUT', '/api/orgs/capped/budget', { monthlyTokens: 5, alertPercents: [0] })).json()).toMatchObject({
      code: 'invalid_body',
    });
    expect((await api('PUT', '/api/orgs/nobody/budget', { monthlyTokens: 5 })).statusCode).toBe(404);
    expect((await api('PUT', '/api/orgs/soft/budget', { monthlyTokens: null })).json()).toEqual({ org: 'soft', budget: null });
    const { records } = await createOperations(deps).auditRecent(1);
    expect(records[0]).toMatchObject({ actor: 'admin:olga', action: 'org.budget', target: 'org:soft', detail: { monthlyTokens: null } });
  });
});
