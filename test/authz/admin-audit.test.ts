/**
 * The audit trail's hash chain: pure verification of changed, removed and reordered records,
 * then the real Redis stream: concurrent appends stay one chain, a record rewritten or a tail
 * deleted behind the admin core's back is detected, and `admin audit verify` exits 1 on it.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chain, GENESIS_HASH, verifyChain, type AuditEvent, type AuditRecord } from '../../authz/src/admin/audit-chain.js';
import { openAdminDeps, type AdminDeps } from '../../authz/src/admin/deps.js';
import type { Connection } from '../../authz/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const T0 = Date.parse('2031-01-01T00:00:00Z');
const event = (n: number): AuditEvent => ({ actor: 'token:alice', action: 'org.update', target: `org:o${n}`, from: '127.0.0.1', detail: { rpm: n, models: ['m'] } });

function chainOf(count: number): AuditRecord[] {
  const records: AuditRecord[] = [];
  let head = { seq: 0, hash: GENESIS_HASH };
  for (let i = 1; i <= count; i += 1) {
    const record = chain(event(i), head, T0 + i);
    records.push(record);
    head = { seq: record.seq, hash: record.hash };
  }
  return records;
}

const headOf = (records: AuditRecord[]) => ({ seq: records.at(-1)!.seq, hash: records.at(-1)!.hash });

describe('audit chain (pure)', () => {
  it('verifies an intact chain, and the empty one', async () => {
    const records = chainOf(5);
    expect(await verifyChain(records, headOf(records))).toEqual({ ok: true, records: 5, head: headOf(records) });
    expect(await verifyChain([], { seq: 0, hash: GENESIS_HASH })).toMatchObject({ ok: true, records: 0 });
  });

  it('finds a changed field, a removed record, a reordering and a removed tail', async () => {
    const records = chainOf(5);
    const head = headOf(records);
    const changed = records.map((r) => (r.seq === 3 ? { ...r, detail: { ...r.detail, rpm: 999 } } : r));
    expect(await verifyChain(changed, head)).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/changed/) });
    const actor = records.map((r) => (r.seq === 2 ? { ...r, actor: 'token:mallory' } : r));
    expect(await verifyChain(actor, head)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(await verifyChain(records.filter((r) => r.seq !== 4), head)).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/missing/) });
    expect(await verifyChain([records[0]!, records[2]!, records[1]!, records[3]!, records[4]!], head)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(await verifyChain(records.slice(0, 4), head)).toMatchObject({ ok: false, brokenAt: 5, reason: expect.stringMatching(/removed/) });
  });

  it('hashes detail keys in a canonical order', () => {
    const a = chain({ ...event(1), detail: { a: 1, b: 2 } }, { seq: 0, hash: GENESIS_HASH }, T0);
    const b = chain({ ...event(1), detail: { b: 2, a: 1 } }, { seq: 0, hash: GENESIS_HASH }, T0);
    expect(a.hash).toBe(b.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('audit trail in Redis', () => {
  const prefix = testPrefix();
  let deps: AdminDeps;
  let connection: Connection;
  let redis: Redis;
  const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

  beforeAll(async () => {
    const opened = openAdminDeps({ modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET, redisUrl: TEST_REDIS_URL, redisKeyPrefix: prefix, redisTimeoutMs: 2000 });
    ({ deps, connection } = opened);
    await connection.ready();
    redis = new Redis(TEST_REDIS_URL);
  });

  afterAll(async () => {
    redis.disconnect();
    await connection.purge();
    await connection.close();
  });

  function cliVerify(): Promise<{ code: number; stdout: string }> {
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, KEY_HASH_SECRET: TEST_SECRET, MODEL_ID: TEST_MODEL };
    return new Promise((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'authz/src/admin/cli.ts', 'audit', 'verify', '--json'], { cwd: repoRoot, env }, (error, stdout) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout });
      });
    });
  }

  it('keeps one unbroken chain under 20 concurrent appends', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => deps.audit.record(event(i))));
    expect(await deps.audit.verify()).toMatchObject({ ok: true, records: 20, head: { seq: 20 } });
    const seqs = (await deps.audit.recent(20)).map((r) => r.seq);
    expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    const verified = await cliVerify();
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, records: 20 });
  });

  it('detects a record rewritten behind its back (the stream rebuilt with one field changed)', async () => {
    const stream = `${prefix}audit`;
    const entries = await redis.xrange(stream, '-', '+');
    await redis.del(stream);
    for (const [, fields] of entries) {
      const copy = [...fields];
      const at = copy.indexOf('actor');
      if (copy[copy.indexOf('seq') + 1] === '7') copy[at + 1] = 'token:someone-else';
      await redis.xadd(stream, '*', ...copy);
    }
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 7 });
    const verified = await cliVerify();
    expect(verified.code).toBe(1);
    expect(JSON.parse(verified.stdout).error).toMatch(/broken at record 7/);
  });

  it('continues the same chain after a restart (a new connection and log on the same prefix)', async () => {
    await connection.purge();
    await deps.audit.record(event(1));
    const restarted = openAdminDeps({ modelId: TEST_MODEL, defaultRpm: 600, defaultTpm: 1000, keyPrefix: 'CTG', keyHashSecret: TEST_SECRET, redisUrl: TEST_REDIS_URL, redisKeyPrefix: prefix, redisTimeoutMs: 2000 });
    try {
      await restarted.connection.ready();
      expect((await restarted.deps.audit.record(event(2))).seq).toBe(2);
      expect(await restarted.deps.audit.verify()).toMatchObject({ ok: true, records: 2 });
    } finally {
      await restarted.connection.close();
    }
  });

  it('detects a deleted last record through the stored head', async () => {
    await connection.purge();
    for (let i = 0; i < 3; i += 1) await deps.audit.record(event(i));
    const [last] = await redis.xrevrange(`${prefix}audit`, '+', '-', 'COUNT', 1);
    await redis.xdel(`${prefix}audit`, last![0]);
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/removed/) });
  });
});
