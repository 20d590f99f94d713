/**
 * Both file stores behind one interface, against real backends: a temp directory and the
 * PostgreSQL on 127.0.0.1:5432 (a database of this run's own, dropped after). What a batch
 * needs of a store: parts written whole (and "only if absent" once), records per organization.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchFileStore, StoredFile } from '../../embedder/src/batch/file-store.js';
import { openDirectoryStore } from '../../embedder/src/batch/fs-store.js';
import { openPostgresStore } from '../../embedder/src/batch/pg-store.js';

const PG_ADMIN = process.env.BATCH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `ctg_batch_test_${randomBytes(4).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'ctg-batch-store-'));
const psql = (sql: string) => execFileSync('psql', [PG_ADMIN, '-qAtc', sql], { stdio: 'pipe' });

beforeAll(() => psql(`CREATE DATABASE ${database}`));
afterAll(() => {
  psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  rmSync(dir, { recursive: true, force: true });
});

const file = (org: string, id: string, createdAt: number, expiresAt = createdAt + 100): StoredFile => ({
  id,
  org,
  purpose: 'batch',
  bytes: 10,
  createdAt,
  expiresAt,
  filenameSealed: 'x',
  dataKey: 'v1.k.x',
  group: `in-${id}`,
  parts: 1,
  lines: [1],
});

const stores: Array<[string, () => Promise<BatchFileStore>]> = [
  ['directory', () => openDirectoryStore(dir)],
  ['postgres', () => openPostgresStore({ url: PG_ADMIN.replace(/\/postgres$/, `/${database}`), timeoutMs: 5000 })],
];

describe.each(stores)('the %s store', (_name, open) => {
  let store: BatchFileStore;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(() => store.close());

  it('writes parts whole, replaces them, writes "if absent" once, and deletes a group', async () => {
    const group = `out-batch_${randomBytes(12).toString('hex')}`;
    await store.putPart(group, 0, Buffer.from('a'));
    await store.putPart(group, 0, Buffer.from('b'));
    expect((await store.getPart(group, 0))?.toString()).toBe('b');
    expect(await store.putPartIfAbsent(group, 1, Buffer.from('first'))).toBe(true);
    expect(await store.putPartIfAbsent(group, 1, Buffer.from('second'))).toBe(false);
    expect((await store.getPart(group, 1))?.toString()).toBe('first');
    await store.deleteGroup(group);
    expect(await store.getPart(group, 0)).toBeNull();
    expect(await store.getPart(group, 1)).toBeNull();
  });

  it('scopes records to their organization, lists newest first, and finds expired ones', async () => {
    const org = `org-${randomBytes(3).toString('hex')}`;
    const [a, b] = [`file-${randomBytes(12).toString('hex')}`, `file-${randomBytes(12).toString('hex')}`];
    await store.saveFile(file(org, a, 100, 150));
    await store.saveFile(file(org, b, 200, 9_999_999_999));
    expect((await store.listFiles(org)).map((f) => f.id)).toEqual([b, a]);
    expect(await store.getFile('another-org', a)).toBeNull();
    expect((await store.expiredFiles(160, 10)).map((f) => f.id)).toContain(a);
    expect((await store.expiredFiles(160, 10)).map((f) => f.id)).not.toContain(b);
    expect(await store.deleteFile(org, a)).toBe(true);
    expect(await store.deleteFile(org, a)).toBe(false);
    expect(await store.getFile(org, a)).toBeNull();
  });

  it('refuses names that are not ids, so no id reaches a path or a query it should not', async () => {
    if (_name !== 'directory') return;
    await expect(store.getPart('in-../../etc', 0)).rejects.toThrow(/invalid group/);
    await expect(store.getFile('org', '../x')).rejects.toThrow(/invalid file id/);
  });
});
