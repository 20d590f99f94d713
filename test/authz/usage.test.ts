import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utcDay } from '../../authz/src/store/records.js';
import { alsEntry, envoyCheck, startAuthz, streamAccessLogs, testConfig, TEST_MODEL, type RunningAuthz } from '../support/grpc-authz.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const NOW = Date.parse('2030-01-01T12:00:00Z');
let authz: RunningAuthz;

beforeAll(async () => {
  authz = await startAuthz(testConfig(testPrefix()), { clock: () => NOW });
});

afterAll(async () => {
  await authz.store.purge();
  await authz.stop();
});

async function collect(org: string) {
  const entries = [];
  for await (const entry of authz.store.readUsage({ org })) entries.push(entry);
  return entries;
}

describe('StreamAccessLogs', () => {
  it('records exactly the tokens returned, across many concurrent streams', async () => {
    const identity = { org: 'load', keyId: 'ABCDEFGHIJKL', model: TEST_MODEL };
    let sent = 0;
    const streams = Array.from({ length: 20 }, (_, s) =>
      Array.from({ length: 5 }, (_, b) =>
        Array.from({ length: 10 }, (_, e) => {
          const tokens = 1 + ((s * 50 + b * 10 + e) % 37);
          sent += tokens;
          return alsEntry({ ...identity, tokens, requestId: `s${s}-b${b}-e${e}`, time: NOW });
        }),
      ),
    );
    await Promise.all(streams.map((batches) => streamAccessLogs(authz.accessLog, batches)));
    const entries = await collect('load');
    expect(entries).toHaveLength(1000);
    expect(entries.reduce((sum, e) => sum + e.tokens, 0)).toBe(sent);
    expect(new Set(entries.map((e) => e.requestId)).size).toBe(1000);
    const [daily] = await authz.store.readDaily('load', [utcDay(NOW)]);
    expect(daily?.counters).toMatchObject({ requests: 1000, tokens: sent, [`tokens:${TEST_MODEL}`]: sent });
  });

  it('records a reused request id twice, and skips non-200s and entries without identity or tokens', async () => {
    const identity = { org: 'mixed', keyId: 'ABCDEFGHIJKL', model: TEST_MODEL, time: NOW };
    await streamAccessLogs(authz.accessLog, [[
      alsEntry({ ...identity, tokens: 5, requestId: 'same' }),
      alsEntry({ ...identity, tokens: 6, requestId: 'same' }),
      alsEntry({ ...identity, tokens: 99, status: 429 }),
      alsEntry({ ...identity, tokens: 99, path: '/health' }),
      alsEntry({ ...identity, tokens: undefined }),
      alsEntry({ ...identity, org: undefined, tokens: 99 }),
    ]]);
    const entries = await collect('mixed');
    expect(entries.map((e) => [e.requestId, e.tokens, e.keyId, e.model, e.time])).toEqual([
      ['same', 5, 'ABCDEFGHIJKL', TEST_MODEL, NOW],
      ['same', 6, 'ABCDEFGHIJKL', TEST_MODEL, NOW],
    ]);
  });

  it('debits the tokens-per-minute limit, so the next check is refused once it is used up', async () => {
    await addOrg(authz.store, 'thrifty', { tpm: 100 });
    const key = await addKey(authz.store, 'thrifty');
    const request = envoyCheck({ authorization: `Bearer ${key.key}` });
    expect((await authz.check(request)).http_response).toBe('ok_response');
    await streamAccessLogs(authz.accessLog, [[alsEntry({ org: 'thrifty', keyId: key.id, model: TEST_MODEL, tokens: 101, time: NOW })]]);
    const refused = await authz.check(request);
    const problem = JSON.parse(refused.denied_response!.body);
    expect(problem).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect(problem.detail).toMatch(/tokens-per-minute/);
    const headers = Object.fromEntries(refused.denied_response!.headers.map((h) => [h.header!.key, h.header!.value]));
    expect(headers).toMatchObject({ 'x-ratelimit-remaining-tokens': '0', 'retry-after': '1' });
  });
});
