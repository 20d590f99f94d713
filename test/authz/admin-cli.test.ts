import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { addKey } from './fixtures.js';
import { TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const prefix = testPrefix();
let authz: RunningAuthz;
let now = Date.now();

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the admin CLI as operators do, against this test's Redis prefix and secret. */
function admin(...args: string[]): Promise<Run> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, KEY_HASH_SECRET: TEST_SECRET, MODEL_ID: TEST_MODEL };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'authz/src/admin/cli.ts', ...args], { cwd: repoRoot, env }, (error, stdout, stderr) => {
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
    expect(await adminJson('org', 'create', 'acme', '--rpm', '100', '--tpm', '5000')).toMatchObject({ id: 'acme', models: [TEST_MODEL], endpoints: ['embeddings'], rpm: 100, tpm: 5000 });
    expect(await adminJson('org', 'create', 'empty', '--models', '')).toMatchObject({ id: 'empty', models: [] });
    expect(await adminJson('org', 'update', 'empty', '--models', TEST_MODEL, '--rpm', '7')).toMatchObject({ models: [TEST_MODEL], rpm: 7, rpmIsDefault: false });
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

  it('creates keys with an expiry', async () => {
    const created = await adminJson('key', 'create', '--org', 'acme', '--expires-at', '2000-01-01T00:00:00Z');
    expect(created.expiresAt).toBe('2000-01-01T00:00:00.000Z');
    const response = await authz.check(envoyCheck({ authorization: `Bearer ${created.key}` }));
    expect(JSON.parse(response.denied_response!.body).code).toBe('expired_api_key');
  });

  it('reports usage totals and exports records as JSON lines and CSV', async () => {
    const t = Date.parse('2030-01-02T10:00:00Z');
    // Usage as the embedder records it through authz's Admission service.
    const keys: Record<string, string> = { acme: (await addKey(authz.store, 'acme')).id, empty: (await addKey(authz.store, 'empty')).id };
    const record = async (org: string, requestId: string, tokens: number, at: number) => {
      now = at;
      await authz.admission.record({ admissionId: `adm-${org}-${requestId}`, org, keyId: keys[org]!, model: TEST_MODEL, requestId, tokens });
    };
    await record('acme', 'a', 10, t);
    await record('acme', 'b:2', 20, t + 60_000);
    await record('empty', 'c', 7, t);
    now = Date.now();
    expect(await adminJson('usage', '--org', 'acme')).toMatchObject({ org: 'acme', requests: 2, tokens: 30 });
    const ranged = await adminJson('usage', '--org', 'acme', '--since', '2030-01-02T10:00:30Z', '--until', '2030-01-02T23:00:00Z');
    expect(ranged).toMatchObject({ requests: 1, tokens: 20, daily: [{ day: '2030-01-02', requests: 2, tokens: 30 }] });

    const jsonl = await admin('usage', 'export', '--org', 'acme', '--format', 'jsonl');
    expect(jsonl.stdout.trim().split('\n').map((line) => JSON.parse(line))).toEqual([
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

  it('rotates a key with an overlap and audits CLI actions as cli:<os user> from cli@<host>', async () => {
    const created = await adminJson('key', 'create', '--org', 'acme', '--name', 'rotating');
    const rotated = await adminJson('key', 'rotate', created.id, '--overlap', '120');
    expect(rotated.old).toMatchObject({ id: created.id, status: 'active' });
    expect(Date.parse(rotated.old.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
    expect(rotated.new).toMatchObject({ org: 'acme', name: 'rotating', status: 'active' });
    expect(rotated.new.key).toMatch(new RegExp(`^CTG_${rotated.new.id}_[A-Z]{38}$`));
    const { records } = await adminJson('audit', 'list', '--limit', '2');
    expect(records[0]).toMatchObject({ action: 'key.rotate', target: `key:${created.id}`, actor: expect.stringMatching(/^cli:.+/), from: expect.stringMatching(/^cli@.+/), detail: { newKey: rotated.new.id, overlapSeconds: 120 } });
    expect(JSON.stringify(records)).not.toContain(rotated.new.key.split('_')[2]);
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
});
