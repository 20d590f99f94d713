/**
 * The global work index's protocol (contract/redis/batch.lua; docs/batch.md, "Shared state"), step
 * by step on the real functions, in the interleavings a Redis Cluster allows (no call spans an
 * organization's slot and the index's): an organization is enlisted before its batch is queued;
 * a sweeper that read a version and then found the organization idle seals that version, so an
 * open under it is refused (and the store enlists again) instead of queueing work the sweeper's
 * retire would then drop; a retire under a version an enlist has since replaced removes nothing;
 * an enlist whose open never came (a crash) is retired; the expiry sweep retires organizations
 * with nothing open, reschedules the others at their soonest expiry, and puts one with open
 * batches back in the work index if a retire took it out.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import { accessKeys } from '../../contract/access-records.js';
import { batchFunctionNames, batchIndexRouteKey, batchKeys, batchRouteKey } from '../../contract/redis/batch-keys.js';
import { openBatchStore } from '../../embedder/src/settlement/batch-store.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { issueGrant, testClaims } from '../support/settlement.js';

const prefix = testPrefix();
const fn = batchFunctionNames(prefix).fn;
const index = batchIndexRouteKey(prefix);
let authz: RedisStore;
let redis: Redis;
let keys: ReturnType<typeof batchKeys>;
let store: ReturnType<typeof openBatchStore>;

const fcall = (name: string, key: string, ...args: Array<string | number>) => redis.call('FCALL', name, 1, key, ...args);
const batch = () => `batch_${randomBytes(6).toString('hex')}`;

/** An organization as admin writes it (a seal is kept only for an organization that exists). */
async function created(label: string): Promise<string> {
  const org = `${label}-${randomBytes(3).toString('hex')}`;
  await redis.hset(accessKeys(prefix).org(org), { id: org, models: '[]' });
  return org;
}

/** The raw open (what the store sends after its enlist), for a fresh grant of `org`. */
async function rawOpen(org: string, id: string, version: number): Promise<[number, string]> {
  const grant = testClaims({ org, path: '/v1/batches' });
  await issueGrant(prefix, grant);
  return (await fcall(fn.open, batchRouteKey(prefix, org), grant.uid, id, 'file-1', 1, 1, 86_400_000, 'o', 'e', version)) as [
    number,
    string,
  ];
}

beforeAll(async () => {
  authz = createStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
  await authz.ready();
  await authz.settlement.ensure(true);
  keys = batchKeys(prefix, authz.settlement.keys()!.root.slice(prefix.length, -1));
  redis = new Redis(TEST_REDIS_URL);
  store = openBatchStore({ url: TEST_REDIS_URL, prefix, timeoutMs: 2000 });
  for (let i = 0; i < 100; i += 1) {
    if (
      await store.list('x', null, 1).then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
});

afterAll(async () => {
  store?.close();
  redis?.disconnect();
  await authz?.purge();
  await authz?.close();
});

describe('the work index', () => {
  it('refuses an open under a version a sweeper sealed (its retire would drop the work); the store enlists again and the work stays indexed', async () => {
    const org = await created('sealed');
    const v1 = Number(await fcall(fn.enlist, index, org, Date.now() + 86_400_000));
    // A sweeper reads the candidates (org at v1) and finds the organization idle: nothing is queued yet.
    const candidates = (await redis.call('FCALL_RO', fn.candidates, 1, index, 100)) as string[];
    expect(candidates[candidates.indexOf(org) + 1]).toBe(String(v1));
    expect(await fcall(fn.take, batchRouteKey(prefix, org), 'sweeper', 60_000, v1)).toEqual(['idle']);
    // (batch-keys.ts names what batch.lua writes.)
    expect(await redis.get(keys.sealed(org))).toBe(String(v1));
    expect(await redis.hget(keys.versions, org)).toBe(String(v1));
    expect(Number(await redis.get(keys.seq))).toBeGreaterThanOrEqual(v1);
    // The open under v1 would queue work the sweeper's retire then drops: refused, nothing written.
    const id = batch();
    expect(await rawOpen(org, id, v1)).toEqual([4, '']);
    expect(await redis.exists(keys.record(org, id))).toBe(0);
    expect(await fcall(fn.retire, index, org, v1, 'active')).toBe(1);
    expect(await redis.zscore(keys.active, org)).toBeNull();
    // The store's open enlists again (a new version) and opens: indexed, and claimable.
    const grant = testClaims({ org, path: '/v1/batches' });
    await issueGrant(prefix, grant);
    const opened = await store.open(grant, {
      id,
      inputFileId: 'file-1',
      segments: 1,
      lines: 1,
      windowMs: 86_400_000,
      dataKeys: { output: 'o', error: 'e' },
    });
    expect(opened).toEqual({ kind: 'opened', batchId: id });
    expect(await redis.zscore(keys.active, org)).not.toBeNull();
    expect(await store.claim('worker', 60_000)).toMatchObject({ org, batch: id, task: 'run' });
  });

  it('keeps an organization whose version changed between the read and the retire', async () => {
    const org = await created('raced');
    const v1 = Number(await fcall(fn.enlist, index, org, Date.now() + 86_400_000));
    expect(await fcall(fn.take, batchRouteKey(prefix, org), 'sweeper', 60_000, v1)).toEqual(['idle']);
    // An open comes between the sweeper's check and its retire: a new version, then the work.
    const v2 = Number(await fcall(fn.enlist, index, org, Date.now() + 86_400_000));
    expect(v2).toBeGreaterThan(v1);
    expect((await rawOpen(org, batch(), v2))[0]).toBe(0);
    expect(await fcall(fn.retire, index, org, v1, 'active')).toBe(0);
    expect(await redis.zscore(keys.active, org)).not.toBeNull();
    // The next claim finds the work; once it is committed, the organization is idle and retired.
    const task = (await store.claim('worker', 60_000))!;
    expect(task).toMatchObject({ org, task: 'run' });
    expect(await store.admit(org, task.batch, [{ line: 0, tokens: 3 }], Date.now())).toEqual(['model_not_enabled']);
    expect(await store.record(task, [{ line: 0, kind: 'failed', code: 'model_not_found' }], Date.now())).toEqual({
      recorded: 0,
      failed: 1,
      ended: true,
    });
    while ((await store.claim('worker', 60_000)) !== null);
    expect(await redis.zscore(keys.active, org)).toBeNull();
  });

  it('retires an enlist whose open never came (a crash between the two), from both indexes', async () => {
    const org = `crashed-${randomBytes(3).toString('hex')}`;
    await fcall(fn.enlist, index, org, 1);
    expect(await redis.zscore(keys.active, org)).not.toBeNull();
    expect(await redis.zscore(keys.expiring, org)).toBe('1');
    while ((await store.claim('worker', 60_000)) !== null);
    expect(await redis.zscore(keys.active, org)).toBeNull();
    expect((await store.unfinished(100)).filter((u) => u.org === org)).toEqual([]);
    expect(await redis.zscore(keys.expiring, org)).toBeNull();
    // Out of both indexes, its version is gone; an organization admin never created left no seal.
    expect(await redis.hexists(keys.versions, org)).toBe(0);
    expect(await redis.exists(keys.sealed(org))).toBe(0);
  });

  it('the expiry sweep lists open batches per organization and reschedules each at its soonest expiry', async () => {
    const org = `open-${randomBytes(3).toString('hex')}`;
    const grant = testClaims({ org, path: '/v1/batches' });
    await issueGrant(prefix, grant);
    const id = batch();
    await store.open(grant, {
      id,
      inputFileId: 'file-1',
      segments: 1,
      lines: 1,
      windowMs: 3_600_000,
      dataKeys: { output: 'o', error: 'e' },
    });
    // A stale score (lower than the batch's expiry) is put right by the sweep.
    await redis.zadd(keys.expiring, 5, org);
    const open = (await store.unfinished(100)).filter((u) => u.org === org);
    expect(open.map((u) => u.batch)).toEqual([id]);
    expect(Number(await redis.zscore(keys.expiring, org))).toBe(open[0]!.expiresAt);
    // Retired from the work index with the version it read (what the embedder's password allows),
    // its queued work is put back by the next sweep, and claimed.
    const candidates = (await redis.call('FCALL_RO', fn.candidates, 1, index, 100)) as string[];
    expect(await fcall(fn.retire, index, org, candidates[candidates.indexOf(org) + 1]!, 'active')).toBe(1);
    await store.unfinished(100);
    expect(await redis.zscore(keys.active, org)).not.toBeNull();
    expect(await store.claim('worker', 60_000)).toMatchObject({ org, batch: id, task: 'run' });
  });

  it('shares claims between organizations, least served first', async () => {
    while ((await store.claim('drain', 60_000)) !== null);
    const orgs = [`fair-a-${randomBytes(3).toString('hex')}`, `fair-b-${randomBytes(3).toString('hex')}`];
    for (const org of orgs) {
      const grant = testClaims({ org, path: '/v1/batches' });
      await issueGrant(prefix, grant);
      await store.open(grant, {
        id: batch(),
        inputFileId: 'f',
        segments: 4,
        lines: 4,
        windowMs: 3_600_000,
        dataKeys: { output: 'o', error: 'e' },
      });
    }
    const claimed: string[] = [];
    for (let i = 0; i < 6; i += 1) claimed.push((await store.claim('fair', 60_000))!.org);
    expect(claimed.filter((o) => o === orgs[0]).length).toBe(3);
    expect(claimed.filter((o) => o === orgs[1]).length).toBe(3);
  });
});
