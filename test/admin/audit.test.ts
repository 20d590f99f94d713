/**
 * The audit trail: the chain verified purely (changed, removed, reordered, re-hashed without the
 * key, signed with another key, rolled back past a checkpoint, a forged checkpoint), then the
 * real Redis stream and the real checkpoint file, attacked as someone who can write all of Redis
 * but does not hold the signing key: an edited record, an edited record with every later hash
 * and the head recomputed, a deleted record, a deleted tail with the head re-pointed, and a
 * rollback to an older copy of the trail (also after new records were appended). Each is
 * detected, by the admin core and by `admin audit verify`. Records are timed by Redis's clock:
 * the CLI run with its clock a week behind files its record after the one before.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../admin/src/audit/anchor.js';
import { canonical, chain, GENESIS_HASH, recordStatement, type AuditEvent, type AuditRecord } from '../../admin/src/audit/chain.js';
import { signerFromSecret, type AuditSigner } from '../../admin/src/audit/signing.js';
import { verifyChain } from '../../admin/src/audit/verify.js';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { auditKeys } from '../../admin/src/store/audit.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { repoRoot } from '../../contract/repo-root.js';

const T0 = Date.parse('2031-01-01T00:00:00Z');
const AUDIT_SECRET = 'audit-tests-secret-0123456789abcdefghijkl';
const SIGNER = signerFromSecret(AUDIT_SECRET);
const TRAIL = 'pure:';
const event = (n: number): AuditEvent => ({
  actor: 'admin:alice',
  action: 'org.update',
  target: `org:o${n}`,
  from: '127.0.0.1',
  detail: { rpm: n, models: ['m'] },
});

function chainOf(count: number, signer: AuditSigner = SIGNER): AuditRecord[] {
  const records: AuditRecord[] = [];
  let head = { seq: 0, hash: GENESIS_HASH };
  for (let i = 1; i <= count; i += 1) {
    const chained = chain(event(i), head, T0 + i);
    records.push({ ...chained, sig: signer.sign(recordStatement(TRAIL, chained.seq, chained.hash)) });
    head = { seq: chained.seq, hash: chained.hash };
  }
  return records;
}

const headOf = (records: AuditRecord[]) => ({ seq: records.at(-1)!.seq, hash: records.at(-1)!.hash });
const verify = (records: AuditRecord[], head = headOf(records), checkpoints: Checkpoint[] = []) =>
  verifyChain(
    async function* () {
      yield* records;
    },
    { trail: TRAIL, keys: [SIGNER.publicKey], head, checkpoints },
  );
const checkpointOf = (r: AuditRecord, source = `line ${r.seq}`): Checkpoint => ({ seq: r.seq, hash: r.hash, sig: r.sig, source });

/** Recomputes every hash from `from` on with plain SHA-256, as someone without the key can, keeping the old signatures. */
function rehashed(records: AuditRecord[], edit: (r: AuditRecord) => AuditRecord): AuditRecord[] {
  let prev = GENESIS_HASH;
  return records.map((original) => {
    const r = edit(original);
    const unhashed = { ...r, prevHash: prev };
    const { hash: _h, sig: _s, ...rest } = unhashed;
    const hash = createHash('sha256').update(canonical(rest)).digest('hex');
    prev = hash;
    return { ...unhashed, hash };
  });
}

describe('audit chain (pure)', () => {
  it('verifies an intact chain, and the empty one', async () => {
    const records = chainOf(5);
    expect(await verify(records)).toEqual({ ok: true, records: 5, head: headOf(records), checkpoints: 0 });
    expect(await verify([], { seq: 0, hash: GENESIS_HASH })).toMatchObject({ ok: true, records: 0 });
  });

  it('finds a changed field, a removed record, a reordering and a removed tail', async () => {
    const records = chainOf(5);
    const head = headOf(records);
    const changed = records.map((r) => (r.seq === 3 ? { ...r, detail: { ...r.detail, rpm: 999 } } : r));
    expect(await verify(changed, head)).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/changed/) });
    const actor = records.map((r) => (r.seq === 2 ? { ...r, actor: 'admin:mallory' } : r));
    expect(await verify(actor, head)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(
      await verify(
        records.filter((r) => r.seq !== 4),
        head,
      ),
    ).toMatchObject({ ok: false, brokenAt: 4, reason: expect.stringMatching(/missing/) });
    expect(await verify([records[0]!, records[2]!, records[1]!, records[3]!, records[4]!], head)).toMatchObject({ ok: false, brokenAt: 2 });
    expect(await verify(records.slice(0, 4), head)).toMatchObject({ ok: false, brokenAt: 5, reason: expect.stringMatching(/removed/) });
  });

  it('refuses a chain re-hashed without the key (it links up), and one signed with another key', async () => {
    const forged = rehashed(chainOf(5), (r) => (r.seq === 3 ? { ...r, actor: 'admin:mallory' } : r));
    expect(await verify(forged)).toMatchObject({
      ok: false,
      brokenAt: 3,
      reason: expect.stringMatching(/not signed with the trail's key/),
    });
    const other = chainOf(3, signerFromSecret('another-secret-0123456789abcdefghijklmn'));
    expect(await verify(other)).toMatchObject({ ok: false, brokenAt: 1 });
  });

  it('refuses a chain shorter than a signed checkpoint, or differing from one; and a forged checkpoint', async () => {
    const records = chainOf(5);
    expect(
      await verify(
        records,
        headOf(records),
        records.map((r) => checkpointOf(r)),
      ),
    ).toMatchObject({ ok: true, checkpoints: 5 });
    const older = records.slice(0, 3);
    expect(
      await verify(
        older,
        headOf(older),
        records.map((r) => checkpointOf(r)),
      ),
    ).toMatchObject({
      ok: false,
      brokenAt: 4,
      reason: expect.stringMatching(/line 5 signed record 5 .* rolled back/),
    });
    // Another history from record 4 on, signed with the key (the key holder rolled back): its checkpoint disagrees.
    const other = chainOf(5).map((r) => r);
    const fork = [...older, ...rehashed(other, (r) => (r.seq >= 4 ? { ...r, target: 'org:elsewhere' } : r)).slice(3)].map((r) =>
      r.seq >= 4 ? { ...r, sig: SIGNER.sign(recordStatement(TRAIL, r.seq, r.hash)) } : r,
    );
    expect(await verify(fork, headOf(fork), [checkpointOf(records[3]!)])).toMatchObject({
      ok: false,
      brokenAt: 4,
      reason: expect.stringMatching(/not the one line 4 signed/),
    });
    const forgedLine = { seq: 9, hash: 'a'.repeat(64), sig: 'b'.repeat(86), source: 'line 9' };
    expect(await verify(records, headOf(records), [forgedLine])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/line 9 .*forged/),
    });
  });

  it('hashes detail keys in a canonical order', () => {
    const a = chain({ ...event(1), detail: { a: 1, b: 2 } }, { seq: 0, hash: GENESIS_HASH }, T0);
    const b = chain({ ...event(1), detail: { b: 2, a: 1 } }, { seq: 0, hash: GENESIS_HASH }, T0);
    expect(a.hash).toBe(b.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});

/**
 * A module to preload (node --import) into a child so its clock reads `ms` behind, as a machine
 * whose clock was set back would: Date.now() and new Date() both.
 */
function clockSetBack(ms: number): string {
  const source = `const R = Date; globalThis.Date = class extends R { constructor(...a) { if (a.length === 0) super(R.now() - ${ms}); else super(...a); } static now() { return R.now() - ${ms}; } };`;
  return `data:text/javascript,${encodeURIComponent(source)}`;
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The admin CLI as a child process with exactly `env` (plus PATH and HOME). */
function runCli(args: readonly string[], env: Record<string, string>, preload: string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...preload.flatMap((p) => ['--import', p]), '--import', 'tsx', 'admin/src/cli/main.ts', ...args],
      { cwd: repoRoot, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('audit trail in Redis, checkpointed to a file', () => {
  const prefix = testPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'audit-anchor-'));
  const anchorFile = join(dir, 'anchor.jsonl');
  const stream = auditKeys(prefix).stream;
  const headKey = auditKeys(prefix).head;
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
  // No administrator token: this trail has no administrators, so the CLI acts as bootstrap:<os user>.
  const cliEnv = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    KEY_HASH_SECRET: TEST_SECRET,
    MODEL_ID: TEST_MODEL,
    AUDIT_SECRET,
    AUDIT_ANCHOR_FILE: anchorFile,
  };
  let deps: AdminDeps;
  let connection: Connection;
  let redis: Redis;

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

  const cliVerify = () => runCli(['audit', 'verify', '--json'], cliEnv);

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

  it('keeps one unbroken, signed, checkpointed chain under 20 concurrent appends; the CLI agrees', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => deps.audit.record(event(i))));
    expect(await deps.audit.verify()).toMatchObject({ ok: true, records: 20, head: { seq: 20 }, checkpoints: 20 });
    const records = await deps.audit.recent(20);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    // Redis's clock orders them: never a record dated before the one it follows.
    const times = records.map((r) => Date.parse(r.at)).reverse();
    expect(times).toEqual([...times].sort((a, b) => a - b));
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
      sig: expect.stringMatching(/^[\w-]{86}$/),
    });
    const verified = await cliVerify();
    expect(verified.code, verified.stderr).toBe(0);
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

  it('detects an edited record with every later hash and the head recomputed (no key to sign them), with or without the checkpoints', async () => {
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
    expect(await deps.audit.verify()).toMatchObject({ ok: false, brokenAt: 3, reason: expect.stringMatching(/not the one line 3/) });
    expect((await cliVerify()).code).toBe(1);
    // Without the checkpoint file's evidence, the head's signature still gives it away.
    const lines = readFileSync(anchorFile, 'utf8').split('\n');
    writeFileSync(anchorFile, `${lines[0]}\n${lines[1]}\n`);
    expect(await deps.audit.verify()).toMatchObject({
      ok: false,
      brokenAt: 3,
      reason: expect.stringMatching(/not signed with the trail's key/),
    });
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
    const field = (name: string) => fields[fields.indexOf(name) + 1]!;
    await redis.hset(headKey, { seq: '3', hash: field('hash'), sig: field('sig') });
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

  it("refuses a forged checkpoint line, and a trail with no checkpoint at all; other trails' lines are left alone", async () => {
    await recordMany(2);
    appendFileSync(
      anchorFile,
      `${JSON.stringify({ trail: 'another-prefix:', seq: 1, hash: 'c'.repeat(64), at: new Date().toISOString(), sig: 'd'.repeat(86) })}\n`,
    );
    expect(await deps.audit.verify()).toMatchObject({ ok: true, checkpoints: 2 });
    appendFileSync(
      anchorFile,
      `${JSON.stringify({ trail: prefix, seq: 9, hash: 'a'.repeat(64), at: new Date().toISOString(), sig: 'b'.repeat(86) })}\n`,
    );
    expect(await deps.audit.verify()).toMatchObject({ ok: false, reason: expect.stringMatching(/line 4 .*forged/) });
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

  it("refuses, in Redis, a record dated before the chain's head or far from Redis's clock", async () => {
    const head = await deps.audit.record(event(1));
    const { AuditStore } = await import('../../admin/src/store/audit.js');
    const store = new AuditStore(connection);
    const at = Date.parse(head.at);
    const fields = { seq: '2' };
    expect(await store.append(1, { seq: 2, hash: 'f'.repeat(64), atMs: at - 1, sig: 'x' }, fields)).toBe('stale');
    expect(await store.append(1, { seq: 2, hash: 'f'.repeat(64), atMs: Date.now() - 7 * 86_400_000, sig: 'x' }, fields)).toBe('stale');
    expect(await store.append(1, { seq: 2, hash: 'f'.repeat(64), atMs: Date.now() + 3_600_000, sig: 'x' }, fields)).toBe('stale');
    expect(await store.append(0, { seq: 2, hash: 'f'.repeat(64), atMs: at, sig: 'x' }, fields)).toBe('moved');
    expect(await deps.audit.verify()).toMatchObject({ ok: true, records: 1 });
  });

  it('the CLI run with its clock 7 days behind files its record after the one before, at Redis time', async () => {
    const before = await deps.audit.record(event(1));
    const week = 7 * 86_400_000;
    const late = await runCli(['org', 'create', 'late-clock', '--json'], cliEnv, [clockSetBack(week)]);
    expect(late.code, late.stderr).toBe(0);
    // The CLI's own clock was a week behind (the organization it made says so)...
    expect(Date.now() - Date.parse(JSON.parse(late.stdout).createdAt)).toBeGreaterThan(week - 60_000);
    // ...but its audit record is dated by Redis: not before the record it follows.
    const [record] = await deps.audit.recent(1);
    expect(record).toMatchObject({ seq: 2, action: 'org.create', target: 'org:late-clock' });
    expect(Date.parse(record!.at)).toBeGreaterThanOrEqual(Date.parse(before.at));
    expect(Math.abs(Date.parse(record!.at) - Date.now())).toBeLessThan(60_000);
    expect(await deps.audit.verify()).toMatchObject({ ok: true, records: 2 });
  });
});
