/**
 * The bootstrap owner of `make console`: `.local/admin-token` is registered as a token of
 * `local-owner` when the server starts. Once revoked it stays revoked: the next `make console`
 * does not register it again (it says so in its log and in the audit trail), so a revocation
 * survives restarts. Runs the real target twice on a Redis prefix of its own.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';
import { testPrefix } from '../support/redis-store.js';
import { startAdminServer, type AdminServer, type ConsoleTarget } from './admin-server.js';

const dir = mkdtempSync(join(tmpdir(), 'admin-bootstrap-'));
const secretFile = join(dir, 'key-hash-secret');
writeFileSync(secretFile, TEST_SECRET);
const target: ConsoleTarget = {
  redisKeyPrefix: testPrefix(),
  secretFile,
  modelId: TEST_MODEL,
  dir,
  auditSecret: 'admin-bootstrap-tests-audit-secret-012345678',
};
let server: AdminServer | null = null;

afterAll(async () => {
  await server?.stop();
});

describe('make console: the bootstrap owner token', () => {
  it('stays revoked across restarts once revoked', async () => {
    server = await startAdminServer(target);
    const bearer = { authorization: `Bearer ${server.token}` };
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${server!.url}${path}`, { ...init, headers: { ...bearer, ...init.headers } });
    expect((await api('/api/orgs')).status).toBe(200);
    const { admins } = await (await api('/api/admins')).json();
    const owner = admins.find((a: { name: string }) => a.name === 'local-owner');
    const id = owner.tokens[0].id as string;
    expect(id).toMatch(/^bootstrap-[0-9a-f]{8}$/);
    expect((await api(`/api/admins/local-owner/tokens/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api('/api/orgs')).status).toBe(401);

    await server.stop();
    server = await startAdminServer(target);
    expect((await api('/api/orgs')).status).toBe(401);
    expect(readFileSync(server.log, 'utf8')).toMatch(/bootstrap_token_revoked/);
    await server.stop();
    server = null;
  }, 120_000);
});
