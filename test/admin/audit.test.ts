/**
 * The audit trail: the keyed chain verified purely (changed, removed, reordered, re-hashed
 * records), then the real Redis stream and the real checkpoint file, attacked as someone who can
 * write all of Redis but does not hold the audit secret: an edited record, an edited record with
 * every later hash and the head recomputed by the unkeyed method, a deleted record, a deleted
 * tail with the head re-pointed, and a rollback to an older copy of the trail's keys (also after
 * new records were appended). Each is detected, by the admin core and by `admin audit verify`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditKeys, canonical, chain, GENESIS_HASH, verifyChain, type AuditEvent, type AuditRecord } from '../../admin/src/audit/chain.js';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const T0 = Date.parse('2031-01-01T00:00:00Z');
const AUDIT_SECRET = 'audit-tests-secret-0123456789abcdefghijkl';
const KEY = auditKeys(AUDIT_SECRET).chain;
const event = (n: number): AuditEvent => ({
  actor: 'admin:alice',
  action: 'org.update',
  target: `org:o${n}`,
  from: '127.0.0.1',
  detail: { rpm: n, models: ['m'] },
});

function chainOf(count: number, key = KEY): AuditRecord[] {
  const records: AuditRecord[] = [];
  let head = { seq: 0, hash: GENESIS_HASH };
  for (let i = 1; i <= count; i += 1) {
    const record = chain(event(i), head, T0 + i, key);
    records.push(record);
    head = { seq: record.seq, hash: record.hash };
  }
  return records;
}

const headOf = (records: AuditRecord[]) => ({ seq: records.at(-1)!.seq, hash: records.at(-1)!.hash });

describe('audit chain (pure)', () => {
  it('verifies an intact chain, and the empty one', async () => {
    const records = chainOf(5);
    expect(await verifyChain(records, headOf(records), KEY)).toEqual({ ok: true, records: 5, head: headOf(records), checkpoints: 0 });
    expect(await verifyChain([], { seq: 0, hash: GENESIS_HASH }, KEY)).toMatchObject({ ok: true, records: 0 });
  });

  it('finds a changed field, a removed record, a reordering and a removed tail', async () => {
    const records = chainOf(5);
    const head = headOf(records);
    const changed = records.map((r) => (r.seq === 3 ? { ...r, detail: { ...r.detail, rpm: 999 } } : r));
    expect(await verifyChain(changed, head, KEY)).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/changed/) });
    const actor = records.map((r) => (r.seq === 2 ? { ...r, actor: 'admin:mallory' } : r));
    expect(await verifyChain(actor, head, KEY)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(
      await verifyChain(
        records.filter((r) => r.seq !== 4),
        head,
        KEY,
      ),
    ).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/missing/) });
    expect(await verifyChain([records[0]!, records[2]!, records[1]!, records[3]!, records[4]!], head, KEY)).toMatchObject({
      ok: false,
      brokenAt: 2,
    });
    expect(await verifyChain(records.slice(0, 4), head, KEY)).toMatchObject({
      ok: false,
      brokenAt: 5,
      reason: expect.stringMatching(/removed/),
    });
  });

  it('refuses a chain hashed without the secret, or with another one, though it links up', async () => {
    const plain = (record: Omit<AuditRecord, 'hash'>) => createHash('sha256').update(canonical(record)).digest('hex');
    let head = { seq: 0, hash: GENESIS_HASH };
    const unkeyed: AuditRecord[] = [];
    for (let i = 1; i <= 3; i += 1) {
      const unhashed = { ...event(i), seq: i, at: new Date(T0 + i).toISOString(), prevHash: head.hash };
      const record = { ...unhashed, hash: plain(unhashed) };
      unkeyed.push(record);
      head = { seq: i, hash: record.hash };
    }
    expect(await verifyChain(unkeyed, head, KEY)).toMatchObject({ ok: false, brokenAt: 1, reason: expect.stringMatching(/not keyed/) });
    const other = chainOf(3, auditKeys('another-secret-0123456789abcdefghijklmn').chain);
    expect(await verifyChain(other, headOf(other), KEY)).toMatchObject({ ok: false, brokenAt: 1 });
  });

  it('refuses a chain shorter than its latest checkpoint, or differing from one', async () => {
    const records = chainOf(5);
    const anchors = { bySeq: new Map(records.map((r) => [r.seq, r.hash])), latest: 5 };
    expect(await verifyChain(records, headOf(records), KEY, anchors)).toMatchObject({ ok: true, checkpoints: 5 });
    const older = records.slice(0, 3);
    expect(await verifyChain(older, headOf(older), KEY, anchors)).toMatchObject({
      ok: false,
      brokenAt: 4,
      reason: expect.stringMatching(/rolled back/),
    });
    const forked = [
      ...older,
      ...chainOf(5)
        .slice(3)
        .map((r) => r),
    ];
    const replaced = { bySeq: new Map([[4, 'f'.repeat(64)]]), latest: 4 };
    expect(await verifyChain(forked, headOf(forked), KEY, replaced)).toMatchObject({
      ok: false,
      brokenAt: 4,
      reason: expect.stringMatching(/checkpoint/),
    });
  });

  it('hashes detail keys in a canonical order', () => {
    const a = chain({ ...event(1), detail: { a: 1, b: 2 } }, { seq: 0, hash: GENESIS_HASH }, T0, KEY);
    const b = chain({ ...event(1), detail: { b: 2, a: 1 } }, { seq: 0, hash: GENESIS_HASH }, T0, KEY);
    expect(a.hash).toBe(b.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('audit trail in Redis, checkpointed to a file', () => {
  const prefix = testPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'audit-anchor-'));
  const anchorFile = join(dir, 'anchor.jsonl');
  const stream = `${prefix}audit`;
  const headKey = `${prefix}audit:head`;
  const settings = {
    modelId: TEST_MODEL,
    defaultRpm: 600,
    defaultTpm: 1000,
    keyPrefix: 'CTG',
    keyHashSecret: TEST_SECRET,
    redisUrl: TEST_REDIS_URL,
    redisKeyPrefix: prefix,
    redisTimeoutMs: 2000,
    auditSecret: AUDIT_SECRET,
    auditAnchorFile: anchorFile,
  };
  let deps: AdminDeps;
  let connection: Connection;
  let redis: Redis;
  const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

  beforeAll(async () => {
    ({ deps, connection } = openAdminDeps(settings));
    await connection.ready();
    redis = new Redis(TEST_REDIS_URL);
  });

  afterAll(async () => {
    redis.disconnect();
    await connection.purge();
    await connection.close();
  });

  beforeEach(async () => {
    await connection.purge();
    writeFileSync(anchorFile, '');
  });

  function cliVerify(): Promise<{ code: number; stdout: string }> {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      KEY_HASH_SECRET: TEST_SECRET,
      MODEL_ID: TEST_MODEL,
      AUDIT_SECRET,
      AUDIT_ANCHOR_FILE: anchorFile,
    };
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'admin/src/cli/main.ts', 'audit', 'verify', '--json'],
        { cwd: repoRoot, env },
        (error, stdout) => {
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout });
        },
      );
    });
  }

  async function recordMany(count: number): Promise<void> {
    for (let i = 1; i <= count; i += 1) await deps.audit.record(event(i));
  }

  /** Rebuilds the stream through `edit` (as a Redis writer could), keeping what it returns. */
  async function rewrite(edit: (fields: Record<string, string>) => Record<string, string> | null): Promise<void> {
    const entries = await redis.xrange(stream, '-', '+');
    await redis.del(stream);
    for (const [, flat] of entries) {
      const fields: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
      const kept = edit(fields);
      if (kept) await redis.xadd(stream, '*', ...Object.entries(kept).flat());
    }
  }

  it('keeps one unbroken, checkpointed chain under 20 concurrent appends; the CLI agrees', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => deps.audit.record(event(i))));
    expect(await deps.audit.verify()).toMatchObject({ ok: true, records: 20, head: { seq: 20 }, checkpoints: 20 });
    expect((await deps.audit.recent(20)).map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    const lines = readFileSync(anchorFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(20);
    expect(lines[0]).toEqual({
      trail: prefix,
      seq: expect.any(Number),
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      at: expect.any(String),
      mac: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const verified = await cliVerify();
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, records: 20, checkpoints: 20 });
  });

  it('detects an edited record', async () => {
    await recordMany(8);
    await rewrite((f) => (f.seq === '7' ? { ...f, actor: 'admin:someone-else' } : f));
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 7, reason: expect.stringMatching(/changed/) });
    const verified = await cliVerify();
    expect(verified.code).toBe(1);
    expect(JSON.parse(verified.stdout).error).toMatch(/broken at record 7/);
  });

  it('detects an edited record re-hashed with the unkeyed method, every later hash and the head too', async () => {
    await recordMany(6);
    let prev = GENESIS_HASH;
    let last = { seq: '0', hash: GENESIS_HASH };
    await rewrite((f) => {
      const record = {
        seq: Number(f.seq),
        at: f.at!,
        actor: f.seq === '3' ? 'admin:mallory' : f.actor!,
        action: f.action!,
        target: f.target!,
        from: f.from!,
        detail: JSON.parse(f.detail!),
        prevHash: prev,
      };
      const hash = createHash('sha256').update(canonical(record)).digest('hex');
      prev = hash;
      last = { seq: f.seq!, hash };
      return { ...f, actor: record.actor, prev_hash: record.prevHash, hash };
    });
    await redis.hset(headKey, last);
    const verdict = await deps.audit.verify();
    expect(verdict).toMatchObject({ ok: false, brokenAt: 1, reason: expect.stringMatching(/not keyed/) });
    expect((await cliVerify()).code).toBe(1);
  });

  it('detects a deleted record in the middle', async () => {
    await recordMany(5);
    await rewrite((f) => (f.seq === '3' ? null : f));
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/missing/) });
  });

  it('detects a deleted tail, also when the head is re-pointed to the new last record', async () => {
    await recordMany(5);
    await rewrite((f) => (Number(f.seq) > 3 ? null : f));
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/removed/) });
    const [[, fields]] = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1)) as [[string, string[]]];
    await redis.hset(headKey, { seq: '3', hash: fields[fields.indexOf('hash') + 1]! });
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/rolled back/) });
    expect((await cliVerify()).code).toBe(1);
  });

  it('detects a rollback to an older copy of the trail, also after new records were appended to it', async () => {
    await recordMany(3);
    const saved = { stream: await redis.dumpBuffer(stream), head: await redis.dumpBuffer(headKey) };
    await recordMany(2);
    await redis.restore(stream, 0, saved.stream!, 'REPLACE');
    await redis.restore(headKey, 0, saved.head!, 'REPLACE');
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/rolled back/) });
    // Admins keep working on the restored copy: seq 4 and 5 exist again, but are not the signed ones.
    await recordMany(2);
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/replaced/) });
    expect((await cliVerify()).code).toBe(1);
  });

  it("refuses a forged or edited checkpoint line, and a trail with no checkpoint at all; other trails' lines are left alone", async () => {
    await recordMany(2);
    appendFileSync(
      anchorFile,
      `${JSON.stringify({ trail: 'another-prefix:', seq: 1, hash: 'c'.repeat(64), at: new Date().toISOString(), mac: 'd'.repeat(64) })}\n`,
    );
    expect(await deps.audit.verify()).toMatchObject({ ok: true, checkpoints: 2 });
    appendFileSync(
      anchorFile,
      `${JSON.stringify({ trail: prefix, seq: 9, hash: 'a'.repeat(64), at: new Date().toISOString(), mac: 'b'.repeat(64) })}\n`,
    );
    expect(await deps.audit.verify()).toMatchObject({ ok: false, reason: expect.stringMatching(/line 4 .*not signed/) });
    writeFileSync(anchorFile, '');
    expect(await deps.audit.verify()).toMatchObject({ ok: false, reason: expect.stringMatching(/no checkpoint/) });
  });

  it('continues the same chain after a restart (a new connection and log on the same prefix)', async () => {
    await deps.audit.record(event(1));
    const restarted = openAdminDeps(settings);
    try {
      await restarted.connection.ready();
      expect((await restarted.deps.audit.record(event(2))).seq).toBe(2);
      expect(await restarted.deps.audit.verify()).toMatchObject({ ok: true, records: 2, checkpoints: 2 });
    } finally {
      await restarted.connection.close();
    }
  });
});
