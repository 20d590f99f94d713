/**
 * One owner of the usage record: contract/usage-record.ts names its stream fields and decodes
 * them, the settlement functions (contract/redis/settlement.lua's record for online requests,
 * batch.lua's commit for batch lines) write them, and admin's reports read them back. A field
 * the Lua writes that the contract does not name (or one it names that the Lua does not write)
 * fails here, on the real Redis for the online record and on the source for the batch one.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnection } from '../../contract/redis-connection.js';
import { decodeDailyUsage, decodeUsage, USAGE_DAILY_FIELDS, USAGE_FIELDS } from '../../contract/usage-record.js';
import { UsageReports } from '../../admin/src/store/reports.js';
import type { SettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { recordTestUsage, testSettlementKeys, testSettlementStore } from '../support/settlement.js';

const prefix = testPrefix();
const record = {
  org: 'usage-org',
  keyId: 'USAGEKEYIDAA',
  model: 'test-bert-1024',
  requestId: 'req-usage-record-1',
  tokens: 42,
};
let settlement: SettlementStore;
let redis: Redis;
let connection: RedisConnection;
let before = 0;

beforeAll(async () => {
  settlement = await testSettlementStore(prefix);
  redis = new Redis(TEST_REDIS_URL);
  connection = new RedisConnection({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
  await connection.ready();
  before = Date.now();
  await recordTestUsage(settlement, prefix, record);
});

afterAll(async () => {
  await connection?.purge();
  await connection?.close();
  settlement?.close();
  redis?.disconnect();
});

describe('the usage record', () => {
  it('is written by the settlement with exactly the fields the contract names, in its order', async () => {
    const entries = await redis.xrange((await testSettlementKeys(prefix)).usageStream(record.org), '-', '+');
    expect(entries).toHaveLength(1);
    const [, pairs] = entries[0]!;
    const written = pairs.filter((_, i) => i % 2 === 0);
    expect(written).toEqual(Object.values(USAGE_FIELDS));
  });

  it("is written by the batch commit with the same fields, in the same order (batch.lua's XADD)", () => {
    const source = readFileSync('contract/redis/batch.lua', 'utf8');
    const xadd = /redis\.call\('XADD', ROOT \.\. '\{' \.\. org \.\. '\}:usage', '\*',([\s\S]*?)\)\n/.exec(source)?.[1] ?? '';
    // The field names are the XADD's arguments at even places (field, value, field, value, …).
    const args = xadd
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    const fields = args.filter((_, i) => i % 2 === 0).map((a) => a.replace(/^'(.*)'$/, '$1'));
    expect(fields).toEqual(Object.values(USAGE_FIELDS));
  });

  it('decodes back to what was recorded (online, at Redis clock), as admin reports it', async () => {
    const [[streamId, pairs]] = (await redis.xrange((await testSettlementKeys(prefix)).usageStream(record.org), '-', '+')) as [
      [string, string[]],
    ];
    const fields = Object.fromEntries(pairs.flatMap((value, i) => (i % 2 === 0 ? [[value, pairs[i + 1]!]] : [])));
    const decoded = decodeUsage(streamId, fields);
    expect(decoded).toEqual({ ...record, time: decoded.time, kind: 'online', batch: '', streamId });
    expect(decoded.time).toBeGreaterThanOrEqual(before - 1000);
    const reported = [];
    for await (const entry of new UsageReports(connection).readUsage({ org: record.org })) reported.push(entry);
    expect(reported).toEqual([decoded]);
  });

  it('its daily counters are written with only the fields the contract names (settlement.lua and batch.lua), and decode', async () => {
    for (const file of ['contract/redis/settlement.lua', 'contract/redis/batch.lua']) {
      const source = readFileSync(file, 'utf8');
      const written = [...source.matchAll(/HINCRBY', daily, '([^']+)'( \.\.)?/g)].map((m) => (m[2] ? `${m[1]}<model>` : m[1]!));
      expect(written.length, file).toBeGreaterThan(3);
      const f = USAGE_DAILY_FIELDS;
      const named = [f.requests, f.tokens, f.batchTokens, `${f.modelRequestsPrefix}<model>`, `${f.modelTokensPrefix}<model>`];
      expect(
        written.filter((field) => !named.includes(field)),
        file,
      ).toEqual([]);
    }
    // The record above, as its day's counters hold it.
    const keys = await testSettlementKeys(prefix);
    const [[streamId, pairs]] = (await redis.xrange(keys.usageStream(record.org), '-', '+')) as [[string, string[]]];
    const recorded = decodeUsage(streamId, Object.fromEntries(pairs.flatMap((value, i) => (i % 2 === 0 ? [[value, pairs[i + 1]!]] : []))));
    const hash = await redis.hgetall(keys.usageDaily(record.org, new Date(recorded.time).toISOString().slice(0, 10)));
    expect(decodeDailyUsage(hash)).toEqual({
      requests: 1,
      tokens: record.tokens,
      batchTokens: 0,
      models: { [record.model]: { requests: 1, tokens: record.tokens } },
    });
    expect(decodeDailyUsage({})).toEqual({ requests: 0, tokens: 0, batchTokens: 0, models: {} });
  });

  it('decodes a missing field to an empty value rather than inventing one; no kind reads as online', () => {
    expect(decodeUsage('1-0', {})).toEqual({
      streamId: '1-0',
      org: '',
      keyId: '',
      model: '',
      requestId: '',
      tokens: 0,
      time: 0,
      kind: 'online',
      batch: '',
    });
  });
});
