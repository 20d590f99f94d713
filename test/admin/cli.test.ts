import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { seedUsage } from '../support/settlement.js';
import { addKey } from '../authz/fixtures.js';
import { openAdminDeps } from '../../admin/src/operations/deps.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { repoRoot } from '../../contract/repo-root.js';

const AUDIT_SECRET = 'admin-cli-tests-audit-secret-0123456789abc';
const dir = mkdtempSync(join(tmpdir(), 'admin-cli-'));
const anchorFile = join(dir, 'anchor.jsonl');
const prefix = testPrefix();
let authz: RunningAuthz;
let now = Date.now();

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The administrator token file the CLI acts with, once the first owner exists. */
let tokenFile: string | null = null;

/** Runs the admin CLI as operators do, against this test's Redis prefix and secret. */
function admin(...args: string[]): Promise<Run> {
  const env = {
    ...(tokenFile ? { ADMIN_TOKEN_FILE: tokenFile } : {}),
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
    execFile(process.execPath, ['--import', 'tsx', 'admin/src/cli/main.ts', ...args], { cwd: repoRoot, env }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs a --json command and parses its one JSON object. */
async function adminJson(...args: string[]): Promise<Record<string, any>> {
  const run = await admin(...args, '--json');
  expect(run.stdout.trim().split('\n'), run.stderr).toHaveLength(1);
  return JSON.parse(run.stdout);
}

beforeAll(async () => {
  authz = await startAuthz(testConfig(prefix), { clock: () => now });
});

afterAll(async () => {
  await authz.store.purge();
  await authz.stop();
});

describe('admin CLI', () => {
  it('creates organizations: no --models grants the served model, --models "" grants none', async () => {
    expect(await adminJson('org', 'create', 'acme', '--rpm', '100', '--tpm', '5000')).toMatchObject({
      id: 'acme',
      models: [TEST_MODEL],
      endpoints: ['embeddings'],
      rpm: 100,
      tpm: 5000,
    });
    expect(await adminJson('org', 'create', 'empty', '--models', '')).toMatchObject({ id: 'empty', models: [] });
    expect(await adminJson('org', 'update', 'empty', '--models', TEST_MODEL, '--rpm', '7')).toMatchObject({
      models: [TEST_MODEL],
      rpm: 7,
      rpmIsDefault: false,
    });
    expect(await adminJson('org', 'update', 'empty', '--rpm', '')).toMatchObject({ rpm: 600, rpmIsDefault: true });
    const list = await adminJson('org', 'list');
    expect(list.orgs.map((o: { id: string }) => o.id)).toEqual(['acme', 'empty']);
  });

  it('creates a key that works in a Check, lists keys without secrets, and revokes', async () => {
    const created = await adminJson('key', 'create', '--org', 'acme', '--name', 'ci');
    expect(created).toMatchObject({ org: 'acme', name: 'ci', expiresAt: null });
    expect(created.key).toMatch(new RegExp(`^CTG_${created.id}_[A-Z]{38}$`));
    const check = () => authz.check(envoyCheck({ authorization: `Bearer ${created.key}` }));
    expect((await check()).http_response).toBe('ok_response');

    const listed = await admin('key', 'list', '--org', 'acme', '--json');
    const secret = created.key.split('_')[2];
    expect(listed.stdout).not.toContain(secret);
    expect(listed.stdout).not.toMatch(/[0-9a-f]{64}/);
    expect(JSON.parse(listed.stdout).keys).toEqual([expect.objectContaining({ id: created.id, status: 'active', revoked: false })]);
    expect((await adminJson('org', 'show', 'acme')).keys).toBe(1);

    expect(await adminJson('key', 'revoke', created.id)).toMatchObject({ id: created.id, revoked: true, status: 'revoked' });
    expect(JSON.parse((await check()).denied_response!.body).code).toBe('revoked_api_key');
  });

  it('creates keys with an expiry, never one already expired', async () => {
    const born = await admin('key', 'create', '--org', 'acme', '--expires-at', '2000-01-01T00:00:00Z', '--json');
    expect(born.code).toBe(2);
    expect(JSON.parse(born.stdout).error).toMatch(/^expiresAt: must be in the future/);
    const created = await adminJson('key', 'create', '--org', 'acme', '--expires-at', '2099-01-01T00:00:00Z');
    expect(created.expiresAt).toBe('2099-01-01T00:00:00.000Z');
    now = Date.parse('2099-01-01T00:00:00Z');
    const response = await authz.check(envoyCheck({ authorization: `Bearer ${created.key}` }));
    now = Date.now();
    expect(JSON.parse(response.denied_response!.body).code).toBe('expired_api_key');
  });

  it('reports usage totals and exports records as JSON lines and CSV', async () => {
    const t = Date.parse('2030-01-02T10:00:00Z');
    // Usage as the embedder records it (contract/redis/settlement.lua).
    const keys: Record<string, string> = { acme: (await addKey(authz.store, 'acme')).id, empty: (await addKey(authz.store, 'empty')).id };
    const record = async (org: string, requestId: string, tokens: number, at: number) => {
      now = at;
      await seedUsage(authz.store.connection.keys.prefix, { org, keyId: keys[org]!, model: TEST_MODEL, requestId, tokens, time: at });
    };
    await record('acme', 'a', 10, t);
    await record('acme', 'b:2', 20, t + 60_000);
    await record('empty', 'c', 7, t);
    now = Date.now();
    expect(await adminJson('usage', '--org', 'acme')).toMatchObject({ org: 'acme', requests: 2, tokens: 30 });
    const ranged = await adminJson('usage', '--org', 'acme', '--since', '2030-01-02T10:00:30Z', '--until', '2030-01-02T23:00:00Z');
    expect(ranged).toMatchObject({ requests: 1, tokens: 20, daily: [{ day: '2030-01-02', requests: 2, tokens: 30 }] });
    // One time format everywhere: a UTC date is its whole day.
    expect(await adminJson('usage', '--org', 'acme', '--since', '2030-01-02', '--until', '2030-01-02')).toMatchObject({
      requests: 2,
      tokens: 30,
    });
    expect(JSON.parse((await admin('usage', '--org', 'acme', '--since', '2030-01-02T10:00', '--json')).stdout).error).toMatch(
      /^since: must be a UTC date \(YYYY-MM-DD\) or an ISO-8601 date-time with a zone/,
    );
    const billing = await admin('usage', 'billing', '--period', 'month', '--since', '2030-01-01', '--until', '2030-01-31');
    expect(billing.stdout.trim().split('\n')).toEqual([
      'period,org,org_name,key_id,key_name,kind,model,requests,tokens',
      `2030-01,acme,,${keys.acme},test,online,${TEST_MODEL},2,30`,
      `2030-01,empty,,${keys.empty},test,online,${TEST_MODEL},1,7`,
    ]);

    const jsonl = await admin('usage', 'export', '--org', 'acme', '--format', 'jsonl');
    expect(
      jsonl.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { time: '2030-01-02T10:00:00.000Z', org: 'acme', key_id: keys.acme, model: TEST_MODEL, request_id: 'a', tokens: 10 },
      { time: '2030-01-02T10:01:00.000Z', org: 'acme', key_id: keys.acme, model: TEST_MODEL, request_id: 'b:2', tokens: 20 },
    ]);
    const csv = await admin('usage', 'export', '--format', 'csv');
    expect(csv.stdout.trim().split('\n')).toEqual([
      'time,org,key_id,model,request_id,tokens',
      `2030-01-02T10:00:00.000Z,acme,${keys.acme},${TEST_MODEL},a,10`,
      `2030-01-02T10:01:00.000Z,acme,${keys.acme},${TEST_MODEL},b:2,20`,
      `2030-01-02T10:00:00.000Z,empty,${keys.empty},${TEST_MODEL},c,7`,
    ]);
  });

  it('rotates a key with an overlap; before any administrator exists, the CLI acts as bootstrap:<os user> from cli:<os user>@<host>', async () => {
    const created = await adminJson('key', 'create', '--org', 'acme', '--name', 'rotating');
    const rotated = await adminJson('key', 'rotate', created.id, '--overlap', '120');
    expect(rotated.old).toMatchObject({ id: created.id, status: 'active' });
    expect(Date.parse(rotated.old.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
    expect(rotated.new).toMatchObject({ org: 'acme', name: 'rotating', status: 'active' });
    expect(rotated.new.key).toMatch(new RegExp(`^CTG_${rotated.new.id}_[A-Z]{38}$`));
    const { records } = await adminJson('audit', 'list', '--limit', '2');
    expect(records[0]).toMatchObject({
      action: 'key.rotate',
      target: `key:${created.id}`,
      actor: expect.stringMatching(/^bootstrap:.+/),
      from: expect.stringMatching(/^cli:.+@.+/),
      detail: { name: 'rotating', newKey: rotated.new.id, overlapSeconds: 120 },
    });
    expect(JSON.stringify(records)).not.toContain(rotated.new.key.split('_')[2]);
    expect(await adminJson('audit', 'verify')).toMatchObject({ ok: true });
  });

  it('makes the first owner with their first token; from then on the CLI acts only as a named administrator', async () => {
    expect((await admin('admin', 'create', 'first-viewer', '--role', 'viewer', '--json')).code).toBe(2);
    const made = await adminJson('admin', 'create', 'root@hospital.example', '--role', 'owner');
    expect(made).toMatchObject({ name: 'root@hospital.example', role: 'owner', createdBy: expect.stringMatching(/^bootstrap:/) });
    expect(made.token.token).toMatch(new RegExp(`^ctga_${made.token.id}_`));
    // An administrator exists: no token, no action.
    const anonymous = await admin('org', 'list', '--json');
    expect(anonymous.code).toBe(1);
    expect(JSON.parse(anonymous.stdout).error).toMatch(/acts as a named administrator: set ADMIN_TOKEN_FILE/);
    tokenFile = join(dir, 'root-token');
    writeFileSync(tokenFile, `${made.token.token}\n`, { mode: 0o600 });
    const opened = openAdminDeps({ ...testConfig(prefix), auditSecret: AUDIT_SECRET, auditAnchorFile: anchorFile });
    try {
      await opened.connection.ready();
      const ops = createOperations(opened.deps);
      expect(await ops.authenticateToken(made.token.token)).toEqual({ name: 'root@hospital.example', role: 'owner' });
      const listed = await admin('admin', 'list', '--json');
      expect(listed.stdout).toContain(made.token.id);
      expect(listed.stdout).not.toContain(made.token.token);
      expect(await adminJson('admin', 'update', 'root@hospital.example', '--disabled', 'true')).toMatchObject({
        error: expect.stringMatching(/last active owner/),
      });
      const second = await adminJson('admin', 'token', 'create', 'root@hospital.example');
      expect(await adminJson('admin', 'token', 'revoke', 'root@hospital.example', second.id)).toEqual({
        admin: 'root@hospital.example',
        id: second.id,
        revoked: true,
      });
      expect(await ops.authenticateToken(second.token)).toBeNull();
    } finally {
      await opened.connection.close();
    }
    expect((await admin('admin', 'create', 'x', '--json')).code).toBe(2);
  });

  it("names the administrator in every CLI record, a revoked key's name included; checks the role per command; records refusals", async () => {
    const key = await adminJson('key', 'create', '--org', 'acme', '--name', 'pacs-indexer');
    await adminJson('key', 'revoke', key.id);
    const [revoked] = (await adminJson('audit', 'list', '--limit', '1')).records;
    expect(revoked).toMatchObject({
      actor: 'admin:root@hospital.example',
      from: expect.stringMatching(/^cli:.+@.+/),
      action: 'key.revoke',
      target: `key:${key.id}`,
      detail: { org: 'acme', name: 'pacs-indexer' },
    });
    // A viewer may read but not change, from the CLI as from the console.
    await adminJson('admin', 'create', 'vic@hospital.example', '--role', 'viewer');
    const vic = await adminJson('admin', 'token', 'create', 'vic@hospital.example');
    const ownerFile = tokenFile;
    tokenFile = join(dir, 'vic-token');
    writeFileSync(tokenFile, vic.token);
    try {
      expect((await adminJson('org', 'list')).orgs.length).toBeGreaterThan(0);
      const refused = await admin('org', 'create', 'by-vic', '--json');
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).error).toBe('org create needs the operator role; admin:vic@hospital.example is a viewer');
      writeFileSync(tokenFile, `ctga_${vic.id}_${'x'.repeat(43)}`);
      const wrong = await admin('org', 'list', '--json');
      expect(wrong.code).toBe(1);
      expect(JSON.parse(wrong.stdout).error).toMatch(/^ADMIN_TOKEN_FILE: not a valid administrator token/);
    } finally {
      tokenFile = ownerFile;
    }
    const { records } = await adminJson('audit', 'list', '--limit', '2');
    expect(records[0]).toMatchObject({
      actor: 'anonymous',
      action: 'session.fail',
      target: `admin-token:${vic.id}`,
      detail: { tokenId: vic.id },
    });
    expect(records[1]).toMatchObject({
      actor: 'admin:vic@hospital.example',
      action: 'access.forbidden',
      target: 'cli:org create',
      detail: { needed: 'operator', role: 'viewer' },
    });
    expect(JSON.stringify(records)).not.toContain('x'.repeat(43));
    expect(await adminJson('audit', 'verify')).toMatchObject({ ok: true });
  });

  it('reports errors as one JSON object with a non-zero exit', async () => {
    const missing = await admin('org', 'show', 'nobody', '--json');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toEqual({ error: 'no organization nobody' });
    const duplicate = await admin('org', 'create', 'acme', '--json');
    expect(JSON.parse(duplicate.stdout).error).toMatch(/already exists/);
    const badOption = await admin('org', 'create', 'x', '--rpm', 'lots', '--json');
    expect(badOption.code).toBe(2);
    expect(JSON.parse(badOption.stdout).error).toMatch(/--rpm/);
    const badFormat = await admin('usage', 'export', '--format', 'xml');
    expect(badFormat.code).toBe(2);
  });

  it('answers --help with the usage on stdout and exit 0, needing no settings; no command is still a usage error', async () => {
    // No REDIS_URL or secrets: help must not read settings or connect anywhere.
    const bare = (...args: string[]): Promise<Run> =>
      new Promise((resolve) => {
        const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', AUDIT_SECRET_FILE: join(tmpdir(), 'no-such-file') };
        execFile(process.execPath, ['--import', 'tsx', 'admin/src/cli/main.ts', ...args], { cwd: repoRoot, env }, (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
    for (const args of [['--help'], ['-h'], ['help'], ['key', 'create', '--help']]) {
      const help = await bare(...args);
      expect(help.code, args.join(' ')).toBe(0);
      expect(help.stdout).toMatch(/^usage: npm run admin -- <org\|key\|usage\|audit\|admin>/);
      expect(help.stdout).toMatch(/^ {2}key create --org <org>/m);
      expect(help.stderr).toBe('');
    }
    const none = await bare();
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^usage: npm run admin/);
  });
});
