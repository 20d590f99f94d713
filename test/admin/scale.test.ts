/**
 * The admin API at scale, as the console uses it (Fastify inject, real Redis, real authz
 * Checks): an organization with 50 keys and usage charted as the top keys by name plus
 * "others", per model, over a custom UTC range, across organizations; keys with their last use;
 * no key born expired; an organization disabled (its keys refused), enabled, deleted (usage and
 * audit kept); the audit trail filtered, paged and exported under names that say what they hold.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { recordUsage } from '../support/settlement.js';

const DAY = 86_400_000;
const prefix = testPrefix();
// The real clock: usage stream ids carry Redis's own time, which the series scan relies on.
let clock = Date.now();
const day = (offset: number) => new Date(clock + offset * DAY).toISOString().slice(0, 10);
const TODAY = day(0);
const YESTERDAY = day(-1);
let authz: RunningAuthz;
let deps: AdminDeps;
let connection: Connection;
let app: FastifyInstance;
let token = '';
const config = { modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1_000_000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET };

beforeAll(async () => {
  authz = await startAuthz(testConfig(prefix), { clock: () => clock });
  ({ deps, connection } = openAdminDeps(
    {
      ...config,
      redisUrl: TEST_REDIS_URL,
      redisKeyPrefix: prefix,
      redisTimeoutMs: 2000,
      auditSecret: 'admin-scale-tests-audit-secret-0123456789a',
      auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'admin-scale-')), 'anchor.jsonl'),
    },
    () => clock,
  ));
  await connection.ready();
  const ops = createOperations(deps);
  await ops.createAdmin({ name: 'otto', role: 'operator' }, { actor: 'cli:test', from: 'cli@test' });
  token = (await ops.createAdminToken('otto', { actor: 'cli:test', from: 'cli@test' })).token;
  app = buildAdminServer({
    ops,
    config,
    stores: deps,
    sessionLifetimes: { idleMs: 60_000, maxMs: 43_200_000 },
    trustedProxies: [],
    oidc: null,
    logLevel: 'silent',
  });
});

afterAll(async () => {
  await app.close();
  await authz.store.purge();
  await authz.stop();
  await connection.close();
});

const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as never, headers: { authorization: `Bearer ${token}` } });
const json = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
  const response = await api(method, url, payload);
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
};

describe('an organization with 50 keys', () => {
  const keys: Array<{ id: string; key: string; name: string }> = [];

  beforeAll(async () => {
    await json('POST', '/api/orgs', { id: 'radiology', name: 'Radiology' });
    await json('POST', '/api/orgs', { id: 'cardiology' });
    for (let i = 0; i < 50; i += 1) {
      const made = await json('POST', '/api/orgs/radiology/keys', { name: `worker-${String(i).padStart(2, '0')}` });
      keys.push({ id: made.id, key: made.key, name: made.name });
    }
    // Key i uses i+1 tokens per request, one request a day on the last 3 days; cardiology a little.
    let n = 0;
    for (const [i, key] of keys.entries()) {
      for (let d = 2; d >= 0; d -= 1) {
        n += 1;
        await recordUsage(authz.store, {
          org: 'radiology',
          keyId: key.id,
          model: TEST_MODEL,
          requestId: `r${n}`,
          tokens: i + 1,
          time: clock - d * DAY,
        });
      }
    }
    await recordUsage(authz.store, {
      org: 'cardiology',
      keyId: 'CCCCCCCCCCCC',
      model: TEST_MODEL,
      requestId: 'c1',
      tokens: 7,
      time: clock,
    });
  });

  it('charts the top keys by name, the rest as "others", and per model, over a custom UTC range', async () => {
    const series = await json('GET', `/api/orgs/radiology/usage?since=${YESTERDAY}&until=${TODAY}&top=8`);
    expect(series).toMatchObject({ org: 'radiology', since: YESTERDAY, until: TODAY });
    expect(series.days).toEqual([
      { day: YESTERDAY, requests: 50, tokens: 1275 },
      { day: TODAY, requests: 50, tokens: 1275 },
    ]);
    expect(series.keys.map((k: { name: string }) => k.name)).toEqual([
      'worker-49',
      'worker-48',
      'worker-47',
      'worker-46',
      'worker-45',
      'worker-44',
      'worker-43',
      'worker-42',
    ]);
    expect(series.keys[0].days[1]).toEqual({ day: TODAY, requests: 1, tokens: 50 });
    // 42 others: tokens 1..42 a day.
    expect(series.others).toEqual({
      keys: 42,
      days: [
        { day: YESTERDAY, requests: 42, tokens: 903 },
        { day: TODAY, requests: 42, tokens: 903 },
      ],
    });
    expect(series.models).toEqual([{ model: TEST_MODEL, days: series.days }]);
    expect((await api('GET', `/api/orgs/radiology/usage?since=${day(1)}`)).json()).toMatchObject({
      code: 'invalid_body',
      detail: expect.stringMatching(/^since: must not be after until/),
    });
    expect((await api('GET', `/api/orgs/radiology/usage?since=${day(-400)}&until=${TODAY}`)).json()).toMatchObject({
      code: 'invalid_body',
      detail: expect.stringMatching(/at most 366 days/),
    });
  });

  it('shows an empty range as zeros, and every organization side by side', async () => {
    const empty = await json('GET', `/api/orgs/radiology/usage?since=${day(-30)}&until=${day(-29)}`);
    expect(empty).toMatchObject({
      keys: [],
      others: null,
      models: [],
      days: [
        { day: day(-30), requests: 0, tokens: 0 },
        { day: day(-29), requests: 0, tokens: 0 },
      ],
    });
    const across = await json('GET', '/api/usage?days=7');
    expect(across.orgs).toEqual([
      { org: 'radiology', name: 'Radiology', disabled: false, requests: 150, tokens: 3825 },
      { org: 'cardiology', name: '', disabled: false, requests: 1, tokens: 7 },
    ]);
    expect(across.days.at(-1)).toEqual({ day: TODAY, requests: 51, tokens: 1282 });
  });

  it('lists keys with their last use; never creates a key already expired', async () => {
    const { keys: listed } = await json('GET', '/api/orgs/radiology/keys');
    expect(listed).toHaveLength(50);
    expect(listed.find((k: { name: string }) => k.name === 'worker-00')).toMatchObject({ lastUsedAt: new Date(clock).toISOString() });
    const unused = await json('POST', '/api/orgs/radiology/keys', { name: 'spare' });
    expect((await json('GET', '/api/orgs/radiology/keys')).keys.find((k: { id: string }) => k.id === unused.id).lastUsedAt).toBeNull();
    const born = await api('POST', '/api/orgs/radiology/keys', { name: 'late', expiresAt: new Date(clock - 1000).toISOString() });
    expect(born.json()).toMatchObject({
      status: 400,
      code: 'invalid_body',
      detail: 'expiresAt: must be in the future (a key cannot be created already expired)',
    });
  });

  it('disables an organization (its keys refused), enables it, then deletes it with its keys; usage and audit stay', async () => {
    const check = async () => {
      const response = await authz.check(envoyCheck({ authorization: `Bearer ${keys[0]!.key}` }));
      return response.ok_response ? 'ok' : JSON.parse(response.denied_response!.body).code;
    };
    expect(await check()).toBe('ok');
    expect(await json('POST', '/api/orgs/radiology/disable')).toMatchObject({ id: 'radiology', disabled: true, endpoints: [] });
    clock += 2000; // past the key cache
    expect(await check()).toBe('endpoint_not_enabled');
    expect((await api('POST', '/api/orgs/radiology/keys', { name: 'x' })).statusCode).toBe(409);
    expect(await json('POST', '/api/orgs/radiology/enable')).toMatchObject({ disabled: false, endpoints: ['embeddings'] });
    clock += 2000;
    expect(await check()).toBe('ok');
    expect((await api('DELETE', '/api/orgs/radiology')).json()).toMatchObject({
      code: 'conflict',
      detail: 'disable organization radiology before deleting it',
    });
    await json('POST', '/api/orgs/radiology/disable');
    expect(await json('DELETE', '/api/orgs/radiology')).toEqual({ id: 'radiology', deleted: true, keys: 51 });
    clock += 2000;
    expect(await check()).toBe('invalid_api_key');
    expect((await api('GET', '/api/orgs/radiology')).statusCode).toBe(404);
    const exported = await api('GET', '/api/usage/export?format=jsonl&org=radiology');
    expect(exported.body.trim().split('\n')).toHaveLength(150);
    const { records } = await json('GET', '/api/audit?target=org:radiology&limit=4');
    expect(records.map((r: { action: string }) => r.action)).toEqual(['usage.export', 'org.delete', 'org.disable', 'org.enable']);
  });
});

describe('the audit trail for an auditor', () => {
  it('filters by who, what, which object and when; pages with a cursor; exports what matches under a telling name', async () => {
    const all = await json('GET', '/api/audit?limit=500');
    const keyCreates = all.records.filter((r: { action: string }) => r.action === 'key.create');
    expect(keyCreates.length).toBe(51);
    const first = await json('GET', '/api/audit?action=key.create&actor=OTTO&limit=20');
    expect(first.records).toHaveLength(20);
    expect(first.records.every((r: { action: string; actor: string }) => r.action === 'key.create' && r.actor === 'admin:otto')).toBe(true);
    const second = await json('GET', `/api/audit?action=key.create&limit=20&before=${first.next}`);
    expect(second.records[0].seq).toBeLessThan(first.records.at(-1).seq);
    const third = await json('GET', `/api/audit?action=key.create&limit=20&before=${second.next}`);
    expect(third.records).toHaveLength(11);
    expect(third.next).toBeNull();
    const at = all.records.find((r: { action: string }) => r.action === 'org.delete').at;
    expect((await json('GET', `/api/audit?since=${encodeURIComponent(at)}`)).records.every((r: { at: string }) => r.at >= at)).toBe(true);

    const csv = await api('GET', '/api/audit/export?format=csv&action=org.');
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="audit-action-org.-start-to-\d{8}T\d{6}Z\.csv"$/);
    const lines = csv.body.trim().split('\n');
    expect(lines[0]).toBe('seq,at,actor,action,target,from,detail,prev_hash,hash,sig');
    expect(lines.slice(1).map((line) => line.split(',')[3])).toEqual([
      'org.create',
      'org.create',
      'org.disable',
      'org.enable',
      'org.disable',
      'org.delete',
    ]);
    const named = await api('GET', '/api/usage/export?format=jsonl&org=cardiology&since=2031-05-01T00:00:00Z&until=2031-05-31T00:00:00Z');
    expect(named.headers['content-disposition']).toBe(
      'attachment; filename="usage-cardiology-2031-05-01T000000Z-to-2031-05-31T000000Z.jsonl"',
    );
    expect((await json('GET', '/api/audit?limit=1')).records[0]).toMatchObject({ action: 'usage.export', actor: 'admin:otto' });
    expect(await json('GET', '/api/audit/verify')).toMatchObject({ ok: true });
  });
});
