/**
 * admin's writes on a real Redis Cluster (issue 28): three primaries started by
 * scripts/stack/redis-cluster.sh, the admin API (in-process, Fastify inject, an owner's token)
 * and an in-process authz both given the cluster's nodes. Organizations whose records fall on
 * three different primaries are created, given keys (a Check with each key is allowed by authz),
 * budgets and a rotation; administrators are created, given a token, changed and the token
 * revoked; an organization is disabled (its key refused), enabled (allowed again) and deleted
 * (refused, its key record gone). Every change has its audit record and the chain verifies,
 * through the API and through `admin audit verify` run as a separate process. A change
 * interrupted after its record, part-way through its slots, is completed by the next process's
 * recovery; a change computed from a stale read is closed with a `.failed` record, none of it
 * applied. Reads (budgets, usage, the audit trail) work there too.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessKeys } from '../../contract/access-records.js';
import { buildAdminServer } from '../../admin/src/http/server.js';
import { openAdminDeps, type AdminDeps, type OpenConfig } from '../../admin/src/operations/deps.js';
import { ChangeJournal } from '../../admin/src/operations/journal.js';
import { createOperations } from '../../admin/src/operations/operations.js';
import { auditKeys } from '../../admin/src/store/audit.js';
import { ChangeStore } from '../../admin/src/store/changes.js';
import type { Connection } from '../../admin/src/store/connection.js';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, TEST_SECRET, type RunningAuthz } from '../support/grpc-authz.js';
import { primaryOfKey, startTestCluster, type TestCluster } from '../support/redis-cluster.js';
import { testPrefix } from '../support/redis-store.js';
import { repoRoot } from '../../contract/repo-root.js';

// Ports 7300-7399 are this test's: three primaries.
const prefix = testPrefix();
const who = { actor: 'cli:test', from: 'cli@test' };

let testCluster: TestCluster;
let cluster: Cluster;
let PORTS: readonly number[];
let NODES: Array<{ host: string; port: number }>;
let settings: OpenConfig;
let deps: AdminDeps;
let connection: Connection;
let app: FastifyInstance;
let authz: RunningAuthz;
let token = '';

beforeAll(async () => {
  testCluster = await startTestCluster('cluster-admin', 7300, 3);
  ({ client: cluster, ports: PORTS } = testCluster);
  NODES = PORTS.map((port) => ({ host: '127.0.0.1', port }));
  settings = {
    modelId: TEST_MODEL,
    defaultRpm: 600,
    defaultTpm: 1_000_000,
    keyPrefix: 'CTG',
    keyHashSecret: TEST_SECRET,
    redisUrl: 'redis://127.0.0.1',
    redisClusterNodes: NODES,
    redisKeyPrefix: prefix,
    redisTimeoutMs: 2000,
    auditSecret: 'cluster-admin-tests-audit-secret-0123456789',
    auditAnchorFile: join(testCluster.dir, 'anchor.jsonl'),
  };
  ({ deps, connection } = openAdminDeps(settings));
  await connection.ready();
  const ops = createOperations(deps);
  await ops.createAdmin({ name: 'alice', role: 'owner' }, who);
  token = (await ops.createAdminToken('alice', who)).token;
  app = buildAdminServer({
    ops,
    config: settings,
    stores: deps,
    sessionLifetimes: { idleMs: 3_600_000, maxMs: 43_200_000 },
    trustedProxies: [],
    oidc: null,
    publicUrl: null,
    logLevel: 'silent',
  });
  authz = await startAuthz(testConfig(prefix, { redisUrl: 'redis://127.0.0.1' }), { clusterNodes: NODES });
});

afterAll(async () => {
  await app?.close();
  await authz?.stop();
  await connection?.close();
  testCluster?.stop();
});

/** One admin API call as the owner; the JSON reply, after checking its status. */
async function api(method: InjectOptions['method'], url: string, payload?: object, status = 200): Promise<any> {
  const response = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  expect(response.statusCode, `${method} ${url}: ${response.body}`).toBe(status);
  return response.body ? response.json() : null;
}

const primaryOf = (key: string) => primaryOfKey(cluster, key);

/** Organization ids whose records fall on three different primaries. */
async function orgsOnEveryPrimary(label: string): Promise<string[]> {
  const byPort = new Map<number, string>();
  while (byPort.size < PORTS.length) {
    const id = `${label}-${randomBytes(3).toString('hex')}`;
    const port = await primaryOf(accessKeys(prefix).org(id));
    if (!byPort.has(port)) byPort.set(port, id);
  }
  return [...byPort.values()];
}

/** authz's verdict on a Check with `key`: 0 (OK) or the denial's gRPC code. */
async function checkWith(key: string): Promise<number> {
  const response = await authz.check(envoyCheck({ authorization: `Bearer ${key}` }));
  return response.status?.code ?? -1;
}

/**
 * A module to preload (node --import, after tsx) into the CLI so that it is killed (SIGKILL) the
 * moment it would apply a change: after the change's audit record, before any of its writes.
 */
const KILLED_BEFORE_APPLY = `data:text/javascript,${encodeURIComponent(
  `const m = await import(${JSON.stringify(new URL('../../admin/src/store/changes.ts', import.meta.url).href)});` +
    `m.ChangeStore.prototype.apply = () => { process.kill(process.pid, 'SIGKILL'); return new Promise(() => {}); };`,
)}`;

/** The admin CLI as a separate process on the cluster, as the owner; its exit code and parsed output. */
function cli(args: readonly string[], preload: string[] = []): Promise<{ code: number | string; out: any }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', ...preload.flatMap((p) => ['--import', p]), 'admin/src/cli/main.ts', ...args, '--json'],
      {
        cwd: repoRoot,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          REDIS_URL: settings.redisUrl,
          REDIS_CLUSTER_NODES: NODES.map((n) => `${n.host}:${n.port}`).join(','),
          REDIS_KEY_PREFIX: prefix,
          KEY_HASH_SECRET: TEST_SECRET,
          MODEL_ID: TEST_MODEL,
          AUDIT_SECRET: settings.auditSecret,
          AUDIT_ANCHOR_FILE: settings.auditAnchorFile,
          ADMIN_TOKEN: token,
        },
      },
      (error, stdout, stderr) => {
        let out: unknown = `${stdout}${stderr}`;
        try {
          out = JSON.parse(stdout);
        } catch {}
        resolve({ code: error ? (error.signal ?? Number(error.code ?? 1)) : 0, out });
      },
    );
  });
}

async function cliVerify(): Promise<any> {
  const { code, out } = await cli(['audit', 'verify']);
  expect(code, JSON.stringify(out)).toBe(0);
  return out;
}

describe('admin on a Redis Cluster', () => {
  it('creates organizations on every primary, keys authz accepts, budgets, a rotation; the chain verifies', async () => {
    const orgs = await orgsOnEveryPrimary('spread');
    const keys: Record<string, string> = {};
    for (const id of orgs) {
      await api('POST', '/api/orgs', { id, name: `Org ${id}` }, 201);
      keys[id] = (await api('POST', `/api/orgs/${id}/keys`, { name: 'main' }, 201)).key;
      await api('PUT', `/api/orgs/${id}/budget`, { monthlyTokens: 1000, hardStop: true });
    }
    for (const id of orgs) expect(await checkWith(keys[id]!), id).toBe(0);
    expect((await api('GET', '/api/budgets')).budgets.map((b: { org: string }) => b.org).sort()).toEqual([...orgs].sort());
    expect(await api('GET', `/api/orgs/${orgs[0]}/budget`)).toMatchObject({
      budget: { monthlyTokens: 1000, hardStop: true, usedTokens: 0 },
    });
    expect(await api('GET', `/api/orgs/${orgs[1]}/usage`)).toBeTruthy();

    const [old] = (await api('GET', `/api/orgs/${orgs[2]}/keys`)).keys;
    const rotated = await api('POST', `/api/keys/${old.id}/rotate`, { overlapSeconds: 60 }, 201);
    expect(await checkWith(rotated.new.key)).toBe(0);
    expect(await checkWith(keys[orgs[2]!]!)).toBe(0);

    expect(await api('GET', '/api/audit/verify')).toMatchObject({ ok: true });
    expect(await cliVerify()).toMatchObject({ ok: true });
  }, 60_000);

  it('administrators, and an organization disabled, enabled and deleted', async () => {
    await api('POST', '/api/admins', { name: 'bob', role: 'operator' }, 201);
    const bobToken = await api('POST', '/api/admins/bob/tokens', undefined, 201);
    await api('PATCH', '/api/admins/bob', { role: 'viewer' });
    const listed = (await api('GET', '/api/admins')).admins.find((a: { name: string }) => a.name === 'bob');
    expect(listed).toMatchObject({ role: 'viewer', tokens: [{ id: bobToken.id }] });
    await api('DELETE', `/api/admins/bob/tokens/${bobToken.id}`);
    expect((await app.inject({ method: 'GET', url: '/api/orgs', headers: { authorization: `Bearer ${bobToken.token}` } })).statusCode).toBe(
      401,
    );

    const [id] = await orgsOnEveryPrimary('gone');
    await api('POST', '/api/orgs', { id }, 201);
    const key = (await api('POST', `/api/orgs/${id}/keys`, {}, 201)) as { id: string; key: string };
    expect(await checkWith(key.key)).toBe(0);
    await api('POST', `/api/orgs/${id}/disable`);
    expect(await checkWith(key.key)).not.toBe(0);
    await api('POST', `/api/orgs/${id}/enable`);
    expect(await checkWith(key.key)).toBe(0);
    await api('POST', `/api/orgs/${id}/disable`);
    expect(await api('DELETE', `/api/orgs/${id}`)).toEqual({ id, deleted: true, keys: 1 });
    expect(await checkWith(key.key)).not.toBe(0);
    expect(await cluster.exists(accessKeys(prefix).key(key.id))).toBe(0);
    expect(await cluster.exists(accessKeys(prefix).org(id!))).toBe(0);

    const actions = (await api('GET', '/api/audit?limit=11')).records.map((r: { action: string }) => r.action).reverse();
    expect(actions).toEqual([
      'admin.create',
      'admin.token.create',
      'admin.update',
      'admin.token.revoke',
      // The revoked token's refusal.
      'session.fail',
      'org.create',
      'key.create',
      'org.disable',
      'org.enable',
      'org.disable',
      'org.delete',
    ]);
    expect(await api('GET', '/api/audit/verify')).toMatchObject({ ok: true });
  }, 60_000);

  it('completes a change interrupted part-way through its slots on the next start; a stale change is recorded as failed', async () => {
    const [id] = await orgsOnEveryPrimary('crash');
    const ops = createOperations(deps);
    await ops.createOrg({ id }, who);
    // The key's record is written (its slot, as apply writes it), then the process "dies"
    // before the organization's key set and its stamp (other slots).
    const dying = new ChangeStore(connection);
    dying.apply = async (change, seq) => {
      const record = change.guards.find((guard) => guard.expect === 'absent')!;
      await new ChangeStore(connection).apply({ guards: [record], ops: change.ops.filter((op) => op.key === record.key) }, seq);
      throw new Error('killed mid-apply');
    };
    const crashing = createOperations({ ...deps, journal: new ChangeJournal(deps.audit, dying) });
    await expect(crashing.createKey({ org: id, name: 'half' }, who)).rejects.toThrow(/killed/);
    const [record] = await deps.audit.recent(1);
    expect(record).toMatchObject({ action: 'key.create', detail: { org: id, name: 'half' } });
    expect(await ops.listKeys(id)).toMatchObject({ keys: [] });
    expect(await cluster.exists(accessKeys(prefix).key(record!.target.slice('key:'.length)))).toBe(1);
    expect(await cluster.hlen(auditKeys(prefix).journal)).toBe(1);

    const next = openAdminDeps(settings);
    await next.connection.ready();
    try {
      expect(await next.deps.journal.recover()).toEqual({ completed: 1, failed: 0, stuck: 0 });
    } finally {
      await next.connection.close();
    }
    const { keys } = await ops.listKeys(id);
    expect(keys).toMatchObject([{ id: record!.target.slice('key:'.length), name: 'half' }]);
    expect(await cluster.hlen(auditKeys(prefix).journal)).toBe(0);

    // A change computed before another administrator's, overtaken after it was recorded (the
    // check before recording passes, as if the other change landed just after it): refused,
    // recorded as failed, none of it applied.
    const stale = (await deps.orgs.getOrg(id!))!;
    await ops.updateOrg(id, { rpm: 9 }, who);
    const racing = new ChangeStore(connection);
    const check = racing.check.bind(racing);
    racing.check = async (change, seq) => (seq === 0 ? { state: 'apply' } : check(change, seq));
    await expect(
      new ChangeJournal(deps.audit, racing).apply(
        { ...who, action: 'org.update', target: `org:${id}`, detail: { name: 'Stale' } },
        deps.orgs.saveOrgChange({ ...stale, name: 'Stale' }, stale.version ?? 0),
      ),
    ).rejects.toThrow(/changed while/);
    expect(await ops.showOrg(id)).toMatchObject({ name: '', rpm: 9 });
    const [failed] = await deps.audit.recent(1);
    expect(failed).toMatchObject({ action: 'org.update.failed', target: `org:${id}` });
    expect(await api('GET', '/api/audit/verify')).toMatchObject({ ok: true });
    expect(await cliVerify()).toMatchObject({ ok: true });
  }, 60_000);

  it("a CLI killed after a change's audit record: the next admin process applies the change", async () => {
    const [id] = await orgsOnEveryPrimary('killed');
    await api('POST', '/api/orgs', { id }, 201);
    const killed = await cli(['org', 'update', id!, '--name', 'After the crash', '--rpm', '11'], [KILLED_BEFORE_APPLY]);
    expect(killed.code).toBe('SIGKILL');
    const [record] = (await api('GET', '/api/audit?limit=1')).records;
    expect(record).toMatchObject({ action: 'org.update', target: `org:${id}`, detail: { name: 'After the crash', rpm: 11 } });
    expect(await api('GET', `/api/orgs/${id}`)).toMatchObject({ name: '', rpm: 600 });
    // The next write (here the CLI's own, another process) completes it first.
    const next = await cli(['org', 'update', id!, '--tpm', '5000']);
    expect(next.code, JSON.stringify(next.out)).toBe(0);
    expect(await api('GET', `/api/orgs/${id}`)).toMatchObject({ name: 'After the crash', rpm: 11, tpm: 5000 });
    expect((await api('GET', '/api/audit?limit=2')).records.map((r: { action: string }) => r.action)).toEqual(['org.update', 'org.update']);
    expect(await cliVerify()).toMatchObject({ ok: true });
  }, 60_000);
});
