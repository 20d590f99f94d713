/**
 * authz moves the settlement's state from the layout before organizations had a hash tag
 * (issue 28; authz/src/store/migrate-layout.ts): budgets, organization records and their key
 * sets (into the organization's hash tag), month and daily counters, and the one
 * usage stream split by organization, keeping the stream ids; a budget, organization or counter
 * written under the new name since is kept (counters are added, key sets merged); a second run
 * moves nothing; the Check sees the moved budget and counter (a hard stop stays a hard stop
 * across the upgrade); a batch running at the upgrade goes on under the new names (its queue's
 * consumer group kept, its organization in the work index); and several authz replicas
 * migrating at once move each key once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageReports } from '../../admin/src/store/reports.js';
import { migrateLayout } from '../../authz/src/store/migrate-layout.js';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import { accessKeys } from '../../contract/access-records.js';
import { budgetKey } from '../../contract/budget.js';
import { batchKeys } from '../../contract/redis/batch-keys.js';
import { openBatchStore } from '../../embedder/src/settlement/batch-store.js';
import { settlementKeys, settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const prefix = testPrefix();
const ns = randomBytes(16).toString('hex');
const root = `${prefix}${ns}:`;
const keys = settlementKeys(prefix, ns);
const month = new Date().toISOString().slice(0, 7);
const day = new Date().toISOString().slice(0, 10);
let redis: Redis;
let store: RedisStore;
const ids: string[] = [];

const usage = (org: string, n: number) => [
  'org',
  org,
  'key',
  'KEYAAAAAAAAA',
  'model',
  'm1',
  'request_id',
  `r-${n}`,
  'tokens',
  '10',
  'ts',
  String(Date.now()),
  'kind',
  'online',
  'batch',
  '',
];

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL);
  await redis.set(settlementNsKey(prefix), ns);
  // What the untagged layout left: acme's budget (a hard stop at 40), its counters and usage.
  await redis.hset(`${prefix}budget:acme`, { monthly_tokens: '40', hard_stop: '1', alerts: '' });
  await redis.set(`${root}b:acme:${month}`, '35');
  await redis.hset(`${root}usage:daily:acme:${day}`, { requests: '2', tokens: '20', 'tokens:m1': '20' });
  // beta: a budget set again since the upgrade (it wins), and an admission counted since (added to).
  await redis.hset(`${prefix}budget:beta`, { monthly_tokens: '1', hard_stop: '1', alerts: '' });
  await redis.hset(budgetKey(prefix, 'beta'), { monthly_tokens: '500', hard_stop: '0', alerts: '' });
  await redis.set(`${root}b:beta:${month}`, '7');
  await redis.set(keys.month('beta', month), '3');
  // A millisecond apart: entries of different streams within one millisecond have no order between them.
  const base = Date.now();
  for (const [n, org] of ['acme', 'beta', 'acme'].entries())
    ids.push((await redis.xadd(`${root}usage`, `${base + n}-0`, ...usage(org, n)))!);
  await redis.set(keys.month('acme', month), '5');
  // Organizations under their untagged names: acme's record and keys; beta's record written
  // again since the upgrade (it wins) and a key added since (the sets are merged).
  await redis.hset(`${prefix}org:acme`, { id: 'acme', endpoints: '["embeddings"]', models: '["m1"]', rpm: '', tpm: '', created_at: '1' });
  await redis.sadd(`${prefix}org:acme:keys`, 'KEYAAAAAAAAA', 'KEYBBBBBBBBB');
  await redis.hset(`${prefix}org:beta`, { id: 'beta', models: '["old"]' });
  await redis.hset(accessKeys(prefix).org('beta'), { id: 'beta', models: '["new"]' });
  await redis.sadd(`${prefix}org:beta:keys`, 'KEYCCCCCCCCC');
  await redis.sadd(accessKeys(prefix).orgKeys('beta'), 'KEYDDDDDDDDD');
  // A batch of acme's running at the upgrade: its record, lines, segments, list, queue (a stream
  // with its consumer group and one entry left) and the global sets.
  await redis.hset(`${prefix}b:{acme}:batch_old`, {
    id: 'batch_old',
    org: 'acme',
    status: 'in_progress',
    segments: '2',
    segments_done: '1',
    total: '2',
  });
  await redis.hset(`${prefix}b:{acme}:batch_old:l`, { '0': 'u:4' });
  await redis.hset(`${prefix}b:{acme}:batch_old:s`, { '0': 'done' });
  await redis.zadd(`${prefix}b:{acme}:index`, 1000, 'batch_old');
  await redis.xgroup('CREATE', `${prefix}bq:acme`, 'w', '0', 'MKSTREAM');
  await redis.xadd(`${prefix}bq:acme`, '*', 'b', 'batch_old', 's', '1');
  await redis.zadd(`${prefix}bq:active`, 7, 'acme');
  await redis.zadd(`${prefix}bq:open`, Date.now() + 3_600_000, 'acme/batch_old');
  store = createStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
  await store.ready();
  await store.settlement.migrated();
});

afterAll(async () => {
  await store?.purge();
  await store?.close();
  redis?.disconnect();
});

describe('the move from the untagged layout', () => {
  it('moves budgets, counters and usage to their organization-tagged names, and leaves nothing under the old ones', async () => {
    expect(await redis.hgetall(budgetKey(prefix, 'acme'))).toEqual({ monthly_tokens: '40', hard_stop: '1', alerts: '' });
    expect(await redis.hget(budgetKey(prefix, 'beta'), 'monthly_tokens')).toBe('500');
    expect(await redis.get(keys.month('acme', month))).toBe('40');
    expect(await redis.get(keys.month('beta', month))).toBe('10');
    expect(await redis.hgetall(keys.usageDaily('acme', day))).toEqual({ requests: '2', tokens: '20', 'tokens:m1': '20' });
    expect((await redis.xrange(keys.usageStream('acme'), '-', '+')).map(([id]) => id)).toEqual([ids[0], ids[2]]);
    expect((await redis.xrange(keys.usageStream('beta'), '-', '+')).map(([id]) => id)).toEqual([ids[1]]);
    const access = accessKeys(prefix);
    expect(await redis.hgetall(access.org('acme'))).toMatchObject({ id: 'acme', models: '["m1"]' });
    expect((await redis.smembers(access.orgKeys('acme'))).sort()).toEqual(['KEYAAAAAAAAA', 'KEYBBBBBBBBB']);
    expect(await redis.hget(access.org('beta'), 'models')).toBe('["new"]');
    expect((await redis.smembers(access.orgKeys('beta'))).sort()).toEqual(['KEYCCCCCCCCC', 'KEYDDDDDDDDD']);
    const old = [
      `${prefix}org:acme`,
      `${prefix}org:acme:keys`,
      `${prefix}org:beta`,
      `${prefix}org:beta:keys`,
      `${prefix}budget:acme`,
      `${prefix}budget:beta`,
      `${root}b:acme:${month}`,
      `${root}b:beta:${month}`,
      `${root}usage:daily:acme:${day}`,
      `${root}usage`,
    ];
    expect(await redis.exists(...old)).toBe(0);
    // admin's reader sees every organization's usage, in stream order.
    const read: string[] = [];
    for await (const entry of new UsageReports(store.connection).readUsage({})) read.push(entry.streamId);
    expect(read).toEqual(ids);
  });

  it('moves a batch running at the upgrade: it is claimed, listed and swept under the new names', async () => {
    const b = batchKeys(prefix, ns);
    expect(await redis.hgetall(b.record('acme', 'batch_old'))).toMatchObject({ status: 'in_progress', segments_done: '1' });
    expect(await redis.hgetall(b.lines('acme', 'batch_old'))).toEqual({ '0': 'u:4' });
    expect(await redis.hgetall(b.segments('acme', 'batch_old'))).toEqual({ '0': 'done' });
    expect(await redis.zscore(b.active, 'acme')).toBe('7');
    expect(
      await redis.exists(
        `${prefix}b:{acme}:batch_old`,
        `${prefix}bq:acme`,
        `${prefix}bq:active`,
        `${prefix}bq:open`,
        `${prefix}b:{acme}:index`,
      ),
    ).toBe(0);
    const batches = openBatchStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
    try {
      for (
        let i = 0;
        i < 100 &&
        !(await batches.list('acme', null, 1).then(
          () => true,
          () => false,
        ));
        i += 1
      )
        await new Promise((r) => setTimeout(r, 50));
      expect(await batches.list('acme', null, 10)).toEqual([{ id: 'batch_old', createdAt: 1000 }]);
      expect(await batches.claim('w1', 60_000)).toMatchObject({ org: 'acme', batch: 'batch_old', segment: 1, task: 'run' });
      expect((await batches.unfinished(10)).map((u) => `${u.org}/${u.batch}`)).toEqual(['acme/batch_old']);
    } finally {
      batches.close();
    }
  });

  it('moves nothing the second time', async () => {
    expect(await migrateLayout(store.connection, ns)).toBe(0);
    expect(await redis.get(keys.month('acme', month))).toBe('40');
  });

  it('keeps a hard stop across the upgrade: the Check refuses the organization whose moved counter reached its moved budget', async () => {
    const outcome = await store.checkLimits(
      {
        uid: randomUUID(),
        org: 'acme',
        key: 'KEYAAAAAAAAA',
        grantedModel: 'm1',
        method: 'POST',
        path: '/v1/embeddings',
        exp: Date.now() + 60_000,
      },
      'm1',
      Date.now(),
      { rpm: 1000, tpm: 100_000 },
    );
    expect(outcome).toMatchObject({ allowed: false, reason: 'budget', budget: { monthlyTokens: 40, usedTokens: 40 } });
  });

  it('moves each organization once when several replicas migrate at once', async () => {
    const access = accessKeys(prefix);
    const orgs = Array.from({ length: 20 }, (_, i) => `race-${i}`);
    for (const org of orgs) {
      await redis.hset(`${prefix}org:${org}`, { id: org, models: '["m1"]' });
      await redis.sadd(`${prefix}org:${org}:keys`, `K${org}`);
    }
    const moved = await Promise.all([1, 2, 3].map(() => migrateLayout(store.connection, ns)));
    expect(moved.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(40);
    for (const org of orgs) {
      expect(await redis.hget(access.org(org), 'models')).toBe('["m1"]');
      expect(await redis.smembers(access.orgKeys(org))).toEqual([`K${org}`]);
      expect(await redis.exists(`${prefix}org:${org}`, `${prefix}org:${org}:keys`)).toBe(0);
    }
  });
});
