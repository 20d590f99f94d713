/**
 * The settlement credential can only settle (issue 28): logged in AS the embedder's Redis user,
 * exactly as authz creates it (authz/src/store/settlement.ts), every write it can reach is tried
 * on the real Redis: raw writes to the keys of today and of before (usage, buckets, budgets,
 * organizations), listing or dumping the functions (whose source holds the secret namespace),
 * scripts of its own, authz's own check function, and the settlement functions with negative,
 * fractional or too large token counts, uids never issued or malformed, a uid used twice, an
 * expired grant, and other tokens than admitted. All are refused, and the usage stream, the
 * counters and the buckets hold exactly what the one legitimate request wrote. The Batch API's
 * state is under the same namespace: a batch opened, claimed, admitted, committed and finished
 * through the batch functions as this user works, while every raw command on every batch key it
 * could name (the old `b:*`/`bq:*`, today's names under any namespace but the secret one it cannot
 * read) and on the organization and budget records is refused, and nothing there changes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERIOD_MS } from '../../contract/rate-period.js';
import type { RedisStore } from '../../authz/src/store/redis.js';
import { createStore } from '../../authz/src/store/redis.js';
import { accessKeys, encodeOrg } from '../../contract/access-records.js';
import { budgetKey } from '../../contract/budget.js';
import { batchFunctionNames, batchIndexRouteKey, batchKeys } from '../../contract/redis/batch-keys.js';
import { openBatchStore } from '../../embedder/src/settlement/batch-store.js';
import { settlementFunctionNames, type settlementKeys, settlementNsKey, settlementRouteKey } from '../../contract/redis/settlement-keys.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const prefix = testPrefix();
const user = { username: `ctg-embedder-acl-${randomBytes(4).toString('hex')}`, password: randomBytes(24).toString('hex') };
const fn = settlementFunctionNames(prefix);
const ORG = 'victim';
const MODEL = 'm1';
/** The key the settlement calls declare for ORG (its hash tag routes them in a cluster). */
const route = settlementRouteKey(prefix, ORG);
let authz: RedisStore;
let embedder: Redis;
let settlement: SettlementStore;
let keys: ReturnType<typeof settlementKeys>;
let admin: Redis;

/** What authz's Check does for an allowed request: the grant record (ctg_check). */
async function issue(overrides: { exp?: number; tpm?: number } = {}) {
  const now = Date.now();
  const uid = randomUUID();
  const draft = {
    uid,
    org: ORG,
    key: 'VICTIMKEYAAA',
    grantedModel: MODEL,
    method: 'POST',
    path: '/v1/embeddings',
    exp: overrides.exp ?? now + 60_000,
  };
  const outcome = await authz.checkLimits(draft, MODEL, now, { rpm: 1_000_000, tpm: overrides.tpm ?? 1000 });
  expect(outcome.allowed).toBe(true);
  return { ...draft, model: MODEL, tpm: overrides.tpm ?? 1000 };
}

/** The reply, or the error's message (every refusal is an error reply). */
async function attempt(...args: Array<string | number>): Promise<string> {
  try {
    return JSON.stringify(await embedder.call(String(args[0]), ...args.slice(1)));
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}

async function snapshot() {
  const day = new Date().toISOString().slice(0, 10);
  const month = day.slice(0, 7);
  return {
    usage: await admin.xrange(keys.usageStream(ORG), '-', '+'),
    daily: await admin.hgetall(keys.usageDaily(ORG, day)),
    month: await admin.get(keys.month(ORG, month)),
    bucket: await admin.get(keys.tokenBucket(ORG, MODEL)),
  };
}

beforeAll(async () => {
  authz = createStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 }, user);
  await authz.ready();
  await authz.settlement.ensure(true);
  keys = authz.settlement.keys()!;
  admin = new Redis(TEST_REDIS_URL);
  const url = new URL(TEST_REDIS_URL);
  embedder = new Redis({ host: url.hostname, port: Number(url.port || 6379), username: user.username, password: user.password });
  settlement = openSettlementStore({ url: TEST_REDIS_URL, username: user.username, password: user.password, prefix, timeoutMs: 2000 });
  for (let i = 0; i < 100 && !settlement.isReady(); i += 1) await new Promise((r) => setTimeout(r, 50));
  expect(settlement.isReady()).toBe(true);
  // One legitimate request: admitted, recorded.
  const grant = await issue();
  const admitted = await settlement.admit(grant, MODEL, 7, Date.now());
  expect(admitted.kind).toBe('admitted');
  expect(await settlement.record(grant, MODEL, { requestId: 'legit-1', tokens: 7 }, admitted.redisNow + 60_000)).toBe('recorded');
});

afterAll(async () => {
  settlement?.close();
  embedder?.disconnect();
  await admin?.call('ACL', 'DELUSER', user.username).catch(() => undefined);
  admin?.disconnect();
  await authz?.purge();
  await authz?.close();
});

describe("the embedder's Redis user", () => {
  it('cannot write, read or name any key: old names, guessed names, the namespace key, patterns', async () => {
    const before = await snapshot();
    const targets = [
      `${prefix}usage`,
      `${prefix}usage:daily:${ORG}:2030-01-01`,
      `${prefix}rl:tok:${ORG}:${MODEL}`,
      `${prefix}settle:${randomUUID()}`,
      `${prefix}budget:${ORG}`,
      `${prefix}org:${ORG}`,
      settlementNsKey(prefix),
      `${prefix}*`,
      '*',
      `${prefix}00000000000000000000000000000000:usage`,
      // The routing key: FCALL of its functions may name it, nothing else may.
      route,
      settlementRouteKey(prefix, 'other-org'),
    ];
    for (const key of targets) {
      for (const command of [
        ['SET', key, '99999999999:0'],
        ['XADD', key, '*', 'org', ORG, 'tokens', '-99985'],
        ['HINCRBY', key, 'tokens', '-99985'],
        ['HSET', key, 'hard_stop', '0'],
        ['INCRBY', key, '-5'],
        ['GET', key],
        ['HGETALL', key],
        ['DEL', key],
      ]) {
        expect(await attempt(...command), command.join(' ')).toMatch(/^ERR NOPERM/);
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it('cannot learn the namespace or run code of its own: FUNCTION LIST/DUMP, EVAL, SCRIPT, KEYS, SCAN, INFO, ACL, CONFIG, CLIENT', async () => {
    for (const command of [
      ['FUNCTION', 'LIST'],
      ['FUNCTION', 'LIST', 'WITHCODE'],
      ['FUNCTION', 'DUMP'],
      ['FUNCTION', 'LOAD', 'REPLACE', "#!lua name=evil\nredis.register_function('evil', function() return 1 end)"],
      ['FUNCTION', 'FLUSH'],
      ['EVAL', "return redis.call('GET', KEYS[1])", 1, settlementNsKey(prefix)],
      ['SCRIPT', 'LOAD', 'return 1'],
      ['KEYS', '*'],
      ['SCAN', 0],
      ['INFO'],
      ['ACL', 'WHOAMI'],
      ['ACL', 'GETUSER', user.username],
      ['ACL', 'LIST'],
      ['CONFIG', 'GET', '*'],
      ['CLIENT', 'LIST'],
      ['SLOWLOG', 'GET'],
      ['OBJECT', 'ENCODING', settlementNsKey(prefix)],
    ]) {
      expect(await attempt(...command), command.join(' ')).toMatch(/^ERR NOPERM/);
    }
  });

  it("cannot call authz's check (minting grant records) nor any function but its own", async () => {
    const check = [
      fn.check,
      1,
      route,
      randomUUID(),
      'K',
      MODEL,
      MODEL,
      'POST',
      '/v1/embeddings',
      Date.now(),
      1e6,
      1e9,
      PERIOD_MS,
      Date.now() + 1e6,
    ];
    expect(await attempt('FCALL', ...check)).toMatch(/^ERR NOPERM/);
    const other = settlementFunctionNames('another-prefix:');
    expect(await attempt('FCALL', other.admit, 1, route, randomUUID(), 1, Date.now(), PERIOD_MS)).toMatch(/^ERR NOPERM/);
    expect(await attempt('FCALL', 'evil', 0)).toMatch(/^ERR NOPERM/);
    // Its own functions, all of them, are callable (by name).
    expect(await attempt('FCALL_RO', fn.status, 1, route, randomUUID())).toBe('""');
    expect(batchFunctionNames(prefix).write).toContain(`ctg_batch_commit_${fn.library.split('_').at(-1)}`);
  });

  it('settles only what authz issued, once, with a whole token count no larger than the grant allows', async () => {
    const before = await snapshot();
    const now = Date.now();
    const admit = (uid: string, tokens: string | number) => attempt('FCALL', fn.admit, 1, route, uid, tokens, now, PERIOD_MS);
    const outcome = (reply: string) => (reply.startsWith('ERR') ? reply : (JSON.parse(reply) as number[])[0]);
    // 3 unknown or expired, 5 not a token count, 2 over the whole limit.
    expect(outcome(await admit(randomUUID(), 5))).toBe(3);
    expect(outcome(await admit('../../usage', 5))).toBe(3);
    expect(outcome(await admit('*', 5))).toBe(3);
    const grant = await issue();
    for (const bad of ['-5', '1.5', '1e3', '0x10', '', ' 5', '99999999999999999'])
      expect(outcome(await admit(grant.uid, bad)), bad).toBe(5);
    expect(outcome(await admit(grant.uid, 1001))).toBe(2);
    // Nothing written by any of them.
    expect(await snapshot()).toEqual(before);
    // Record or refund before admission, void before record: nothing.
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, 5, 'r-1', now + 60_000)).toBe('-2');
    expect(await attempt('FCALL', fn.refund, 1, route, grant.uid, now, PERIOD_MS)).toBe('0');
    expect(await attempt('FCALL', fn.void, 1, route, grant.uid, now, PERIOD_MS)).toBe('0');
    // Admitted once; a second use of the uid (same or other tokens) is refused as used.
    expect(outcome(await admit(grant.uid, 5))).toBe(0);
    expect(outcome(await admit(grant.uid, 5))).toBe(4);
    expect(outcome(await admit(grant.uid, 3))).toBe(4);
    // Recorded only for the admitted tokens, with a request id of the gateway's shape.
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, 500, 'r-2', now + 60_000)).toBe('-2');
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, -5, 'r-2', now + 60_000)).toBe('-2');
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, 5, 'bad id with spaces', now + 60_000)).toBe('-2');
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, 5, 'r-2', now + 60_000)).toBe('1');
    expect(await attempt('FCALL', fn.record, 1, route, grant.uid, 5, 'r-2', now + 60_000)).toBe('0');
    // Its record is the grant's organization's, key's and model's.
    const after = await snapshot();
    expect(after.usage).toHaveLength(before.usage.length + 1);
    const fields = after.usage.at(-1)![1];
    expect(Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]]] : [])))).toMatchObject({
      org: ORG,
      key: 'VICTIMKEYAAA',
      model: MODEL,
      request_id: 'r-2',
      tokens: '5',
      kind: 'online',
    });
    expect(Number(after.daily.tokens)).toBe(Number(before.daily.tokens) + 5);
    expect(Number(after.month)).toBe(Number(before.month) + 5);
    // Once recorded, a refund takes the record back only as void does (the embedder answers 503
    // for a record it did not see land): within 5 s of the record, not after.
    await admin.hset(keys.grant(ORG, grant.uid), 'at', String(Date.now() - 6_000));
    expect(await attempt('FCALL', fn.refund, 1, route, grant.uid, now, PERIOD_MS)).toBe('0');
    expect(await attempt('FCALL', fn.void, 1, route, grant.uid, now, PERIOD_MS)).toBe('0');
    expect(await snapshot()).toEqual(after);
  });

  it("settles a grant only under its own organization's routing key; the functions never write that key", async () => {
    const before = await snapshot();
    const now = Date.now();
    const outcome = (reply: string) => (reply.startsWith('ERR') ? reply : (JSON.parse(reply) as number[])[0]);
    const grant = await issue();
    // No key, another organization's key, a key that is not a routing key: the grant is unknown there.
    expect(outcome(await attempt('FCALL', fn.admit, 0, grant.uid, 5, now, PERIOD_MS))).toBe(3);
    expect(outcome(await attempt('FCALL', fn.admit, 1, settlementRouteKey(prefix, 'other-org'), grant.uid, 5, now, PERIOD_MS))).toBe(3);
    expect(outcome(await attempt('FCALL', fn.admit, 1, `${prefix}route:{${ORG}}:x`, grant.uid, 5, now, PERIOD_MS))).toBe(3);
    // A key that is not a routing key may not even be named to its functions.
    expect(outcome(await attempt('FCALL', fn.admit, 1, `${prefix}budget:{${ORG}}`, grant.uid, 5, now, PERIOD_MS))).toMatch(/^ERR NOPERM/);
    expect(await snapshot()).toEqual(before);
    expect(outcome(await attempt('FCALL', fn.admit, 1, route, grant.uid, 5, now, PERIOD_MS))).toBe(0);
    expect(await attempt('FCALL', fn.refund, 1, route, grant.uid, now, PERIOD_MS)).toBe('1');
    expect(await admin.exists(route)).toBe(0);
  });

  it('cannot settle an expired grant, nor lock a bucket (the token count is bounded by the grant)', async () => {
    const before = await snapshot();
    const expired = await issue({ exp: Date.now() - 10_000 });
    const reply = JSON.parse(await attempt('FCALL', fn.admit, 1, route, expired.uid, 1, Date.now(), PERIOD_MS)) as number[];
    expect(reply[0]).toBe(3);
    expect(await snapshot()).toEqual(before);
  });
});

describe("the embedder's Redis user and the Batch API", () => {
  const batchFn = batchFunctionNames(prefix).fn;
  const BATCH = `batch_${randomBytes(6).toString('hex')}`;

  /** The secret namespace (this test reads it as a full user; the embedder's user cannot). */
  const secret = () => keys.root.slice(prefix.length, -1);

  /**
   * Every batch key of ORG's batch under namespace `ns`, the old names, and the records the
   * admission reads. The secret namespace's own names are writable by whoever knows NS (Redis's
   * ACL cannot tell a function's commands from the caller's): its secrecy is what the first
   * tests of this file prove; here every name the user could know or guess is tried.
   */
  function batchTargets(ns: string): string[] {
    const b = batchKeys(prefix, ns);
    return [
      b.record(ORG, BATCH),
      b.lines(ORG, BATCH),
      b.segments(ORG, BATCH),
      b.list(ORG),
      b.stream(ORG),
      b.open(ORG),
      b.sealed(ORG),
      b.active,
      b.expiring,
      b.versions,
      b.seq,
      b.org(ORG),
      b.budget(ORG),
      accessKeys(prefix).orgKeys(ORG),
      `${prefix}b:{${ORG}}:${BATCH}`,
      `${prefix}b:{${ORG}}:${BATCH}:l`,
      `${prefix}b:{${ORG}}:index`,
      `${prefix}bq:${ORG}`,
      `${prefix}bq:active`,
      `${prefix}bq:open`,
      batchIndexRouteKey(prefix),
    ];
  }

  async function batchSnapshot(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const key of batchTargets(secret())) out[key] = (await admin.call('DUMP', key).then((v) => JSON.stringify(v))) as string;
    return out;
  }

  it('runs a batch through the functions: opened, claimed, admitted, committed (usage exact), finished', async () => {
    await admin.hset(
      accessKeys(prefix).org(ORG),
      encodeOrg({ id: ORG, endpoints: ['embeddings'], models: [MODEL], rpm: null, tpm: null, createdAt: 0 }),
    );
    const batches = openBatchStore({ url: TEST_REDIS_URL, username: user.username, password: user.password, prefix, timeoutMs: 2000 });
    try {
      for (let i = 0; i < 100; i += 1) {
        if (
          await batches.list(ORG, null, 1).then(
            () => true,
            () => false,
          )
        )
          break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const grant = await issue();
      const opened = await batches.open(
        { ...grant, tpm: 1000 },
        { id: BATCH, inputFileId: 'file-1', segments: 1, lines: 2, windowMs: 86_400_000, dataKeys: { output: 'o', error: 'e' } },
      );
      expect(opened).toEqual({ kind: 'opened', batchId: BATCH });
      const task = await batches.claim('acl-worker', 60_000);
      expect(task).toMatchObject({ org: ORG, batch: BATCH, segment: 0, task: 'run' });
      expect(
        await batches.admit(
          ORG,
          BATCH,
          [
            { line: 0, tokens: 4 },
            { line: 1, tokens: 6 },
          ],
          Date.now(),
        ),
      ).toEqual(['admitted', 'admitted']);
      // A line the batch does not have, or a malformed one, is not admitted.
      expect(await batches.admit(ORG, BATCH, [{ line: 2, tokens: 1 }], Date.now())).toEqual(['stopped']);
      const before = await snapshot();
      const committed = await batches.record(
        task!,
        [
          { line: 0, kind: 'embedded', tokens: 4 },
          { line: 1, kind: 'embedded', tokens: 6 },
        ],
        Date.now(),
      );
      expect(committed).toEqual({ recorded: 2, failed: 0, ended: true });
      const after = await snapshot();
      expect(after.usage.length - before.usage.length).toBe(2);
      expect(Number(after.daily.tokens) - Number(before.daily.tokens)).toBe(10);
      expect(await batches.finish(ORG, BATCH, { output: 'out-1', error: '' }, 60_000)).toBe('completed');
      expect(await batches.get(ORG, BATCH)).toMatchObject({ status: 'completed', completed: 2, outputFileId: 'out-1' });
      // Nothing left: the next claim finds the organization idle and retires it from the index.
      expect(await batches.claim('acl-worker', 60_000)).toBeNull();
      expect(await admin.zscore(batchKeys(prefix, secret()).active, ORG)).toBeNull();
    } finally {
      batches.close();
    }
  });

  it('cannot run a raw command on any batch key, the old ones, or the organization and budget records', async () => {
    const before = await batchSnapshot();
    for (const key of batchTargets(randomBytes(16).toString('hex'))) {
      for (const command of [
        ['HSET', key, 'status', 'in_progress'],
        ['HINCRBY', key, 'completed', '5'],
        ['HSETNX', key, 'x', '1'],
        ['HDEL', key, 'status'],
        ['XADD', key, '*', 'b', BATCH, 's', '0'],
        ['XACK', key, 'w', '0-1'],
        ['XGROUP', 'CREATE', key, 'evil', '0', 'MKSTREAM'],
        ['ZADD', key, '0', ORG],
        ['ZREM', key, ORG],
        ['ZINCRBY', key, '-1000', ORG],
        ['SET', key, '0'],
        ['INCR', key],
        ['PEXPIRE', key, '1'],
        ['DEL', key],
        ['GET', key],
        ['HGETALL', key],
        ['ZRANGE', key, '0', '-1'],
        ['XRANGE', key, '-', '+'],
      ]) {
        expect(await attempt(...command), command.join(' ')).toMatch(/^ERR NOPERM/);
      }
    }
    expect(await batchSnapshot()).toEqual(before);
  });

  it('refuses function calls whose arguments would steer a key: another route, a malformed batch id, a wrong index key', async () => {
    const before = await batchSnapshot();
    expect(await attempt('FCALL', batchFn.cancel, 1, route, '../x')).toBe('""');
    expect(await attempt('FCALL', batchFn.cancel, 1, `${prefix}budget:{${ORG}}`, BATCH)).toMatch(/^ERR NOPERM/);
    expect(await attempt('FCALL', batchFn.cancel, 1, settlementRouteKey(prefix, 'other-org'), BATCH)).toBe('""');
    expect(await attempt('FCALL', batchFn.enlist, 1, route, ORG, 1)).toBe('0');
    expect(await attempt('FCALL', batchFn.enlist, 1, batchIndexRouteKey(prefix), 'bad:org', 1)).toBe('0');
    expect(await attempt('FCALL', batchFn.retire, 1, batchIndexRouteKey(prefix), ORG, '1', 'usage')).toBe('0');
    expect(await attempt('FCALL', batchFn.heartbeat, 1, route, 'w', '*')).toBe('0');
    expect(await batchSnapshot()).toEqual(before);
    expect(budgetKey(prefix, ORG)).toBe(batchKeys(prefix, secret()).budget(ORG));
  });
});
