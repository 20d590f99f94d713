/**
 * The auditor's offline check of an audit export: the commands admin/README.md shows, run as
 * shown (the last one with no Redis and no audit secret anywhere in its environment), then
 * exports tampered with as someone handling the file could (an edited, removed, reordered or
 * cut-off record, a manifest signed with another key), and the trail rolled back in Redis with
 * the checkpoint file cut to match: the online check is fooled, the auditor's earlier export
 * is not.
 */
import { exec } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyExportFile } from '../../admin/src/audit/export-file.js';
import { publicKeyFromPem, signerFromSecret } from '../../admin/src/audit/signing.js';
import { openAdminDeps, type AdminDeps } from '../../admin/src/operations/deps.js';
import { createOperations, type Operations } from '../../admin/src/operations/operations.js';
import { auditKeys } from '../../admin/src/store/audit.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { repoRoot } from '../../contract/repo-root.js';

const AUDIT_SECRET = 'audit-export-tests-secret-0123456789abcdef';
const prefix = testPrefix();
const work = mkdtempSync(join(repoRoot, '.local', 'auditor-'));
const anchorFile = join(mkdtempSync(join(tmpdir(), 'audit-export-')), 'anchor.jsonl');
const who = { actor: 'admin:otto', from: '127.0.0.1' };
const adminEnv = {
  REDIS_URL: TEST_REDIS_URL,
  REDIS_KEY_PREFIX: prefix,
  KEY_HASH_SECRET: TEST_SECRET,
  MODEL_ID: TEST_MODEL,
  AUDIT_SECRET,
  AUDIT_ANCHOR_FILE: anchorFile,
};
let deps: AdminDeps;
let ops: Operations;
let connection: Connection;

beforeAll(async () => {
  ({ deps, connection } = openAdminDeps({ ...adminEnv, ...settings() }));
  await connection.ready();
  ops = createOperations(deps);
  for (const id of ['north', 'south', 'east']) await ops.createOrg({ id }, who);
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await connection.purge();
  await connection.close();
});

function settings() {
  return {
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
}

/** Runs a shell line in the auditor's folder with exactly `env` (plus PATH and HOME). */
function sh(line: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    exec(line, { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The auditor's commands from admin/README.md, comments removed. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(repoRoot, 'admin/README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The audit trail, for an auditor'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .trim()
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, ''));
}

async function exportTo(file: string, filter: Record<string, string> = {}): Promise<string> {
  let text = '';
  for await (const line of await ops.openAuditExport({ format: 'jsonl', ...filter }, who)) text += line;
  writeFileSync(join(work, file), text);
  return text;
}

const keys = () => [publicKeyFromPem(ops.auditPublicKey().publicKey)];
const check = (file: string, earlier: string[] = []) =>
  verifyExportFile(
    join(work, file),
    keys(),
    earlier.map((f) => join(work, f)),
  );
/** Writes `lines` of an export (header, records…, manifest) after `edit` as `file`. */
function tampered(source: string, file: string, edit: (lines: string[]) => string[]): string {
  const lines = readFileSync(join(work, source), 'utf8').trim().split('\n');
  writeFileSync(join(work, file), `${edit(lines).join('\n')}\n`);
  return file;
}

describe("the auditor's offline check", () => {
  it('runs exactly as admin/README.md shows it; the check itself needs no Redis and no secret', async () => {
    const [publish, exportLine, verifyLine] = readmeCommands();
    expect(verifyLine).toBe(
      'npm run -s admin -- audit verify --file audit-2031-03.jsonl --public-key audit-public-key.pem --previous audit-2031-02.jsonl',
    );
    // The operating page and the console's page show the same command this test runs.
    for (const doc of ['docs/operating.md', 'docs/console.md'])
      expect(readFileSync(join(repoRoot, doc), 'utf8'), doc).toContain(`\n${verifyLine}\n`);
    expect((await sh(publish!, adminEnv)).code).toBe(0);
    expect(readFileSync(join(work, 'audit-public-key.pem'), 'utf8')).toBe(ops.auditPublicKey().publicKey);
    // Last month's export, then more work, then this month's, the way the README takes it.
    expect((await sh(exportLine!.replace('2031-03', '2031-02'), adminEnv)).code).toBe(0);
    await ops.createOrg({ id: 'west' }, who);
    const exported = await sh(exportLine!, adminEnv);
    expect(exported.code, exported.stderr).toBe(0);
    // Nothing of the trail's settings: Redis unreachable, no secret, no checkpoint file.
    const offline = await sh(`${verifyLine} --json`, { REDIS_URL: 'redis://127.0.0.1:1', AUDIT_SECRET_FILE: '/nonexistent' });
    expect(offline.code, offline.stderr).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ ok: true, trail: prefix, complete: true, extends: 1 });
    const readable = await sh(verifyLine!, {});
    expect(readable.stdout).toMatch(/^ok: true$/m);
  });

  it('passes an untouched export; fails an edited, removed, reordered or inserted record, a cut-off file and a forged manifest', async () => {
    await exportTo('whole.jsonl');
    expect(await check('whole.jsonl')).toMatchObject({ ok: true, complete: true });
    const editRecord = (n: number, change: (r: Record<string, unknown>) => void) => (lines: string[]) =>
      lines.map((line, i) => {
        if (i !== n) return line;
        const record = JSON.parse(line);
        change(record);
        return JSON.stringify(record);
      });
    expect(
      await check(
        tampered(
          'whole.jsonl',
          'edited.jsonl',
          editRecord(2, (r) => (r.actor = 'admin:mallory')),
        ),
      ),
    ).toMatchObject({
      ok: false,
      brokenAt: 2,
      reason: expect.stringMatching(/changed/),
    });
    expect(await check(tampered('whole.jsonl', 'removed.jsonl', (l) => l.filter((_, i) => i !== 2)))).toMatchObject({
      ok: false,
      brokenAt: 2,
      reason: expect.stringMatching(/missing/),
    });
    expect(await check(tampered('whole.jsonl', 'reordered.jsonl', (l) => [l[0]!, l[2]!, l[1]!, ...l.slice(3)]))).toMatchObject({
      ok: false,
    });
    expect(await check(tampered('whole.jsonl', 'cut.jsonl', (l) => l.slice(0, -3)))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no signed manifest/),
    });
    expect(await check(tampered('whole.jsonl', 'cut-kept-manifest.jsonl', (l) => [...l.slice(0, -3), l.at(-1)!]))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not the \d+ the manifest signed/),
    });
    const mallory = signerFromSecret('mallory-secret-0123456789abcdefghijklmnop');
    // Records removed and a manifest made to match, signed with a key that is not the trail's.
    const forge = (lines: string[]) => {
      const kept = lines.slice(1, -2).map((line) => JSON.parse(line));
      const { manifest } = JSON.parse(lines.at(-1)!);
      const digest = createHash('sha256');
      for (const r of kept) digest.update(`${r.hash}\n`);
      const edited = {
        ...manifest,
        records: kept.length,
        last: kept.at(-1).seq,
        head: { seq: kept.at(-1).seq, hash: kept.at(-1).hash },
        digest: digest.digest('hex'),
      };
      return [
        lines[0]!,
        ...lines.slice(1, -2),
        JSON.stringify({ manifest: edited, sig: mallory.sign(Buffer.from(JSON.stringify(edited))) }),
      ];
    };
    expect(await check(tampered('whole.jsonl', 'forged.jsonl', forge))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not signed by the public key given/),
    });
  });

  it('verifies a filtered export on its own, and finds a record removed from it', async () => {
    await exportTo('orgs.jsonl', { action: 'org.' });
    const verdict = await check('orgs.jsonl');
    expect(verdict).toMatchObject({ ok: true, complete: false });
    expect(await check(tampered('orgs.jsonl', 'orgs-less.jsonl', (l) => l.filter((_, i) => i !== 2)))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/manifest signed/),
    });
  });

  it('catches a rollback of Redis with the checkpoint file cut to match, given the earlier export', async () => {
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const saved = {
        stream: await redis.dumpBuffer(auditKeys(prefix).stream),
        head: await redis.dumpBuffer(auditKeys(prefix).head),
        anchor: readFileSync(anchorFile, 'utf8'),
      };
      await ops.createOrg({ id: 'audited-1' }, who);
      await exportTo('before.jsonl');
      // Someone who can write Redis and the checkpoint file puts both back, then work goes on.
      await redis.restore(auditKeys(prefix).stream, 0, saved.stream!, 'REPLACE');
      await redis.restore(auditKeys(prefix).head, 0, saved.head!, 'REPLACE');
      writeFileSync(anchorFile, saved.anchor);
      expect(await ops.auditVerify()).toMatchObject({ ok: true });
      await exportTo('short.jsonl');
      expect(await check('short.jsonl')).toMatchObject({ ok: true });
      expect(await check('short.jsonl', ['before.jsonl'])).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/ended at record \d+ .*rolled back/),
      });
      for (const id of ['new-1', 'new-2', 'new-3']) await ops.createOrg({ id }, who);
      await exportTo('after.jsonl');
      expect(await check('after.jsonl')).toMatchObject({ ok: true });
      expect(await check('after.jsonl', ['before.jsonl'])).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/not the one .*before\.jsonl ended with: the trail was rolled back or replaced/),
      });
      const cli = await sh(
        'npm run -s admin -- audit verify --file after.jsonl --public-key audit-public-key.pem --previous before.jsonl --json',
        {},
      );
      expect(cli.code).toBe(1);
      expect(JSON.parse(cli.stdout).error).toMatch(/rolled back or replaced/);
    } finally {
      redis.disconnect();
    }
  });

  it('publishes the public key without sign-in, in every export, and names the trail', async () => {
    const text = await exportTo('named.jsonl');
    const header = JSON.parse(text.split('\n')[0]!);
    expect(header).toMatchObject({ format: 'ctg-audit-export/1', trail: prefix, publicKey: ops.auditPublicKey().publicKey });
    expect(header.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(text).not.toContain(AUDIT_SECRET);
  });
});
