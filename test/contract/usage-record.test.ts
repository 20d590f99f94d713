/**
 * One owner of the usage record: contract/usage-record.ts names its stream fields and decodes
 * them, the settlement function (contract/redis/settlement.lua, called by the embedder's store)
 * writes them, and admin's reports read them back. A field the Lua writes that the contract does
 * not name (or one it names that the Lua does not write) fails here, on the real Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnection } from '../../contract/redis-connection.js';
import { settlementKeys } from '../../contract/redis/settlement-keys.js';
import { decodeUsage, USAGE_FIELDS, type UsageRecord } from '../../contract/usage-record.js';
import { UsageReports } from '../../admin/src/store/reports.js';
import type { SettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { recordTestUsage, testSettlementStore } from '../support/settlement.js';

const prefix = testPrefix();
const record: UsageRecord = {
  org: 'usage-org',
  keyId: 'USAGEKEYIDAA',
  model: 'test-bert-1024',
  requestId: 'req-usage-record-1',
  tokens: 42,
  time: Date.parse('2030-01-02T03:04:05.678Z'),
};
let settlement: SettlementStore;
let redis: Redis;
let connection: RedisConnection;

beforeAll(async () => {
  settlement = await testSettlementStore(prefix);
  redis = new Redis(TEST_REDIS_URL);
  connection = new RedisConnection({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
  await connection.ready();
  await recordTestUsage(settlement, record);
});

afterAll(async () => {
  await connection?.purge();
  await connection?.close();
  settlement?.close();
  redis?.disconnect();
});

describe('the usage record', () => {
  it('is written by the settlement with exactly the fields the contract names, in its order', async () => {
    const entries = await redis.xrange(settlementKeys(prefix).usageStream, '-', '+');
    expect(entries).toHaveLength(1);
    const [, pairs] = entries[0]!;
    const written = pairs.filter((_, i) => i % 2 === 0);
    expect(written).toEqual(Object.values(USAGE_FIELDS));
  });

  it('decodes back to what was recorded, as admin reports it', async () => {
    const [[streamId, pairs]] = (await redis.xrange(settlementKeys(prefix).usageStream, '-', '+')) as [[string, string[]]];
    const fields = Object.fromEntries(pairs.flatMap((value, i) => (i % 2 === 0 ? [[value, pairs[i + 1]!]] : [])));
    expect(decodeUsage(streamId, fields)).toEqual({ ...record, streamId });
    const reported = [];
    for await (const entry of new UsageReports(connection).readUsage({ org: record.org })) reported.push(entry);
    expect(reported).toEqual([{ ...record, streamId }]);
  });

  it('decodes a missing field to an empty value rather than inventing one', () => {
    expect(decodeUsage('1-0', {})).toEqual({ streamId: '1-0', org: '', keyId: '', model: '', requestId: '', tokens: 0, time: 0 });
  });
});
