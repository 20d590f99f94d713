/**
 * admin's write protocol on one Redis (operations/journal.ts): every change's audit record is
 * appended first, with its journal entry; then the change is applied slot by slot; then the
 * entry is closed. Checked here: a change interrupted after its record (the apply fails, as a
 * crash would leave it) is completed by the next process's recovery, exactly once; a change
 * whose organization was changed after it was read is refused with a `.failed` record, nothing
 * applied; a second change to an entity with an open change is refused until that one is
 * completed; two admin processes changing one organization at once never mix two changes (each
 * is applied whole or refused); the old audit keys are moved to the tagged ones; the chain
 * verifies throughout.
 * test/e2e/cluster-admin.test.ts runs the same protocol on a Redis Cluster.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openAdminDeps, type AdminDeps, type OpenConfig } from '../../admin/src/operations/deps.js';
import { ChangeJournal } from '../../admin/src/operations/journal.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import { auditKeys } from '../../admin/src/store/audit.js';
import { ChangeStore } from '../../admin/src/store/changes.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const who = { actor: 'admin:alice', from: '127.0.0.1' };
let settings: OpenConfig;
let deps: AdminDeps;
let connection: Connection;
let redis: Redis;

/** The operations with a journal whose apply fails as a crash between record and apply would leave it. */
function crashingOps(base: AdminDeps) {
  const store = new ChangeStore(connection);
  store.apply = async () => {
    throw new Error('crashed after the audit record');
  };
  return createOperations({ ...base, journal: new ChangeJournal(base.audit, store) });
}

/**
 * A journal whose check before recording passes: as if another administrator's change landed
 * between that check and the apply.
 */
function racingJournal(base: AdminDeps): ChangeJournal {
  const store = new ChangeStore(connection);
  const check = store.check.bind(store);
  store.check = async (change, seq) => (seq === 0 ? { state: 'apply' } : check(change, seq));
  return new ChangeJournal(base.audit, store);
}

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL);
});

beforeEach(async () => {
  settings = {
    modelId: TEST_MODEL,
    defaultRpm: 600,
    defaultTpm: 1000,
    keyPrefix: 'CTG',
    keyHashSecret: TEST_SECRET,
    redisUrl: TEST_REDIS_URL,
    redisKeyPrefix: testPrefix(),
    redisTimeoutMs: 2000,
    auditSecret: 'journal-tests-audit-secret-0123456789abcdef',
    auditAnchorFile: join(mkdtempSync(join(tmpdir(), 'journal-')), 'anchor.jsonl'),
  };
  ({ deps, connection } = openAdminDeps(settings));
  await connection.ready();
  return async () => {
    await connection.purge();
    await connection.close();
  };
});

afterAll(() => {
  redis.disconnect();
});

describe('admin writes: the journal', () => {
  it('completes a change interrupted after its audit record on the next start, once', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'clinic', name: 'Clinic' }, who);
    await expect(crashingOps(deps).updateOrg('clinic', { name: 'Renamed', rpm: 7 }, who)).rejects.toThrow(
      /the change is recorded \(audit record \d+\) and will be applied .*crashed/,
    );
    // Recorded, not applied: the record is the newest, the organization unchanged, the entry open.
    const [record] = await deps.audit.recent(1);
    expect(record).toMatchObject({ action: 'org.update', target: 'org:clinic', detail: { name: 'Renamed', rpm: 7 } });
    expect(await ops.showOrg('clinic')).toMatchObject({ name: 'Clinic', rpm: 600 });
    expect(await redis.hkeys(auditKeys(settings.redisKeyPrefix).journal)).toEqual([String(record!.seq)]);

    // The next process (a fresh connection, as after a restart) completes it.
    const next = openAdminDeps(settings);
    await next.connection.ready();
    try {
      expect(await next.deps.journal.recover()).toEqual({ completed: 1, failed: 0, stuck: 0 });
      expect(await next.deps.journal.recover()).toEqual({ completed: 0, failed: 0, stuck: 0 });
    } finally {
      await next.connection.close();
    }
    expect(await ops.showOrg('clinic')).toMatchObject({ name: 'Renamed', rpm: 7 });
    expect(await redis.hlen(auditKeys(settings.redisKeyPrefix).journal)).toBe(0);
    expect(await redis.hlen(auditKeys(settings.redisKeyPrefix).busy)).toBe(0);
    // No second record: the record said what was done, and it was done.
    expect((await deps.audit.recent(1))[0]!.seq).toBe(record!.seq);
    expect(await ops.auditVerify()).toMatchObject({ ok: true, records: record!.seq });
  });

  it('refuses a second change to an entity while one is open, until the open one is completed', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'busy' }, who);
    await expect(crashingOps(deps).setBudget('busy', { monthlyTokens: 100 }, who)).rejects.toThrow(/crashed/);
    // The open change is completed first (it is a crash's: its process is gone), then this one applies.
    await ops.setBudget('busy', { monthlyTokens: 200, hardStop: true }, who);
    expect(await ops.budgetOf('busy')).toMatchObject({ monthlyTokens: 200, hardStop: true });
    const actions = (await deps.audit.recent(2)).map((r) => r.action);
    expect(actions).toEqual(['org.budget', 'org.budget']);
    expect(await ops.auditVerify()).toMatchObject({ ok: true });
  });

  it('refuses a change to an organization changed since it was read; one overtaken after recording is recorded as failed', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'raced' }, who);
    const stale = (await deps.orgs.getOrg('raced'))!;
    await ops.updateOrg('raced', { rpm: 5 }, who);
    const staleChange = () => deps.orgs.saveOrgChange({ ...stale, name: 'Stale' }, stale.version ?? 0);
    const event = { ...who, action: 'org.update', target: 'org:raced', detail: { name: 'Stale' } };
    const before = (await deps.audit.head()).seq;
    // Found stale before it is recorded: refused, nothing recorded.
    await expect(deps.journal.apply(event, staleChange())).rejects.toThrow(/changed since it was read/);
    expect((await deps.audit.head()).seq).toBe(before);
    // Overtaken after it is recorded: refused, a `.failed` record follows, none of it applied.
    await expect(racingJournal(deps).apply(event, staleChange())).rejects.toThrow(/changed while this change was made/);
    expect(await ops.showOrg('raced')).toMatchObject({ name: '', rpm: 5 });
    const [failed, recorded] = await deps.audit.recent(2);
    expect(recorded).toMatchObject({ seq: before + 1, action: 'org.update', detail: { name: 'Stale' } });
    expect(failed).toMatchObject({ action: 'org.update.failed', target: 'org:raced', detail: { change: recorded!.seq } });
    expect(await redis.hlen(auditKeys(settings.redisKeyPrefix).journal)).toBe(0);
    expect(await ops.auditVerify()).toMatchObject({ ok: true });
  });

  it('closes a journal entry it cannot read with a failure record, and goes on', async () => {
    const ops = createOperations(deps);
    const keys = auditKeys(settings.redisKeyPrefix);
    await ops.createOrg({ id: 'after-garbage' }, who);
    await redis.hset(keys.journal, '999', 'not a change');
    await redis.hset(keys.busy, `${settings.redisKeyPrefix}org:elsewhere`, '999');
    await ops.updateOrg('after-garbage', { rpm: 4 }, who);
    expect((await deps.audit.recent(2)).map((r) => [r.action, r.detail.change ?? null])).toEqual([
      ['org.update', null],
      ['change.failed', 999],
    ]);
    expect(await redis.hlen(keys.journal)).toBe(0);
    expect(await redis.hlen(keys.busy)).toBe(0);
    expect(await ops.auditVerify()).toMatchObject({ ok: true });
  });

  it('two admin processes changing one organization at once: each change applied whole or refused, the last applied stands', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'shared' }, who);
    const other = openAdminDeps(settings);
    await other.connection.ready();
    try {
      const opsB = createOperations(other.deps);
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? ops : opsB).updateOrg('shared', { rpm: i + 1, name: `v${i + 1}` }, who)),
      );
      for (const result of results)
        if (result.status === 'rejected') expect(String(result.reason)).toMatch(/conflict|changed|being applied|try again/);
      const records = (await deps.audit.recent(100)).reverse().filter((r) => r.target === 'org:shared');
      const failed = new Set(records.filter((r) => r.action === 'org.update.failed').map((r) => r.detail.change));
      const applied = records.filter((r) => r.action === 'org.update' && !failed.has(r.seq));
      expect(applied.length).toBe(results.filter((r) => r.status === 'fulfilled').length);
      expect(applied.length).toBeGreaterThan(0);
      // Never one change's name with another's rpm: the organization is the last applied change, whole.
      const last = applied.at(-1)!;
      expect(await deps.orgs.getOrg('shared')).toMatchObject({ name: last.detail.name, rpm: last.detail.rpm, version: last.seq });
      expect(await redis.hlen(auditKeys(settings.redisKeyPrefix).journal)).toBe(0);
      expect(await ops.auditVerify()).toMatchObject({ ok: true });
    } finally {
      await other.connection.close();
    }
  });

  it('creates, disables, enables and deletes organizations with keys and administrators, every change recorded once', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'full' }, who);
    const key = await ops.createKey({ org: 'full', name: 'k1' }, who);
    const rotated = await ops.rotateKey(key.id, 60, who);
    await ops.revokeKey(rotated.new.id, who);
    await ops.createAdmin({ name: 'bob', role: 'operator' }, who);
    const token = await ops.createAdminToken('bob', who);
    expect(await ops.authenticateToken(token.token)).toEqual({ name: 'bob', role: 'operator' });
    await ops.revokeAdminToken('bob', token.id, who);
    expect(await ops.authenticateToken(token.token)).toBeNull();
    await ops.updateAdmin('bob', { role: 'viewer' }, who);
    await ops.disableOrg('full', who);
    await ops.enableOrg('full', who);
    await ops.disableOrg('full', who);
    expect(await ops.deleteOrg('full', who)).toEqual({ id: 'full', deleted: true, keys: 2 });
    expect(await deps.orgs.getKey(key.id)).toBeNull();
    const records = (await deps.audit.recent(20)).map((r) => r.action).reverse();
    expect(records).toEqual([
      'org.create',
      'key.create',
      'key.rotate',
      'key.revoke',
      'admin.create',
      'admin.token.create',
      'admin.token.revoke',
      'admin.update',
      'org.disable',
      'org.enable',
      'org.disable',
      'org.delete',
    ]);
    expect(await redis.hlen(auditKeys(settings.redisKeyPrefix).journal)).toBe(0);
    expect(await ops.auditVerify()).toMatchObject({ ok: true, records: 12 });
  });

  it('moves a trail kept under the old keys to the tagged ones, once', async () => {
    const ops = createOperations(deps);
    await ops.createOrg({ id: 'moved' }, who);
    const keys = auditKeys(settings.redisKeyPrefix);
    await redis.rename(keys.stream, `${settings.redisKeyPrefix}audit`);
    await redis.rename(keys.head, `${settings.redisKeyPrefix}audit:head`);
    const next = openAdminDeps(settings);
    await next.connection.ready();
    try {
      const later = createOperations(next.deps);
      await later.updateOrg('moved', { rpm: 3 }, who);
      expect(await later.auditVerify()).toMatchObject({ ok: true, records: 2 });
    } finally {
      await next.connection.close();
    }
    expect(await redis.exists(`${settings.redisKeyPrefix}audit`, `${settings.redisKeyPrefix}audit:head`)).toBe(0);
  });
});
