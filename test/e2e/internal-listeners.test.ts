/**
 * Nothing behind Envoy acts on an identity it did not verify, through the real stack: the
 * embedder's port, reached directly with every identity header an attacker can forge (a real
 * organization, a real key id, the served model), embeds nothing and bills nothing; a grant
 * signed with another secret is refused the same way; the embedder's /metrics answers only the
 * metrics token; and the same request through the gateway, with the real key, is served and
 * billed once. (authz's Check port and /metrics: test/envoy/caller-token.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signGrant } from '../../contract/grant.js';
import { GRANT_HEADER, IDENTITY_HEADERS } from '../../contract/headers.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

let stack: Stack;
let key: CreatedKey;
const CANARY = 'Zebracanary internal listener probe';

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  key = orgWithKey(stack, 'victim');
});
afterAll(async () => stack?.stop());

const direct = (headers: Record<string, string>, path = '/v1/embeddings', method = 'POST') =>
  fetch(`http://127.0.0.1:${stack.ports.embedder}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(method === 'POST' ? { body: JSON.stringify({ model: stack.svc.modelId, input: [CANARY] }) } : {}),
  });

function usageOf(org: string): Array<{ request_id: string }> {
  return stack
    .admin(['usage', 'export', '--org', org, '--format', 'jsonl'])
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('the embedder serves only the gateway', () => {
  it('forged identity headers (real organization, real key id, the model): 401, nothing embedded, nothing billed', async () => {
    const forged = { [IDENTITY_HEADERS.org]: key.org, [IDENTITY_HEADERS.key]: key.id, [IDENTITY_HEADERS.model]: stack.svc.modelId };
    const res = await direct(forged);
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toMatchObject({ code: 'invalid_api_key', status: 401 });
    expect(JSON.stringify(body)).not.toContain('Zebracanary');
    expect(usageOf(key.org)).toHaveLength(0);
  });

  it("a grant signed with any secret but the deployment's: 401, nothing billed", async () => {
    const claims = {
      ...{ org: key.org, key: key.id, model: stack.svc.modelId, tpm: 1_000_000, uid: randomUUID(), exp: Date.now() + 60_000 },
      ...{ method: 'POST', path: '/v1/embeddings' },
    };
    const res = await direct({ [GRANT_HEADER]: signGrant(claims, 'a-guessed-secret-of-the-right-length-0123') });
    expect(res.status).toBe(401);
    expect(usageOf(key.org)).toHaveLength(0);
  });

  it('/metrics answers only the metrics token', async () => {
    expect((await direct({}, '/metrics', 'GET')).status).toBe(401);
    const token = readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim();
    const res = await direct({ authorization: `Bearer ${token}` }, '/metrics', 'GET');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('embedder_settlement_calls_total');
  });

  it('through the gateway with the key, the same request is served and billed once', async () => {
    const res = await stack.request({
      method: 'POST',
      path: '/v1/embeddings',
      body: JSON.stringify({ model: stack.svc.modelId, input: [CANARY] }),
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'x-request-id': 'through-the-gateway' },
    });
    expect(res.status).toBe(200);
    expect(usageOf(key.org).map((u) => u.request_id)).toEqual(['through-the-gateway']);
    // The canary reached no log line on any path.
    for (const name of ['embedder', 'authz', 'envoy']) {
      expect(readFileSync(join(stack.dirs.logDir, `${name}.log`), 'utf8'), name).not.toContain('Zebracanary');
    }
  });
});
