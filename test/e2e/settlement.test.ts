import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRANT_HEADER } from '../../contract/headers.js';
import { grantFromCheck } from '../support/grpc-authz.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { gatewayRequest } from '../support/stack-client.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

let stack: Stack;
const CANARY = 'Zebracanary replayed grant';

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
});
afterAll(async () => stack?.stop());

/** The grant authz signs for `key` on a Check sent as Envoy sends it (with the caller token). */
const grantFor = (key: CreatedKey, path = '/v1/embeddings'): Promise<string> =>
  grantFromCheck(`127.0.0.1:${stack.ports.authz}`, stack.dirs.callerTokenFile, key.key, path);

const direct = (grant: string, text: string, path = '/v1/embeddings') =>
  fetch(`http://127.0.0.1:${stack.ports.embedder}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [GRANT_HEADER]: grant },
    body: JSON.stringify({ model: stack.svc.modelId, input: [text] }),
  });

function usageOf(org: string): Array<{ request_id: string; tokens: number }> {
  return stack
    .admin(['usage', 'export', '--org', org, '--format', 'jsonl'])
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const embed = (key: CreatedKey, text: string) =>
  gatewayRequest(
    { host: 'localhost', port: stack.ports.gateway, ca: stack.ca },
    {
      method: 'POST',
      path: '/v1/embeddings',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: stack.svc.modelId, input: [text] }),
    },
  );

describe('a captured grant', () => {
  it('is served once; replayed with the same body or another text of the same size it serves nothing', async () => {
    const key = orgWithKey(stack, 'replayed');
    const grant = await grantFor(key);
    const first = await direct(grant, CANARY);
    expect(first.status).toBe(200);
    const tokens = (await first.json()).usage.total_tokens;
    for (const text of [CANARY, 'Zebracanary replayed grans']) {
      const replay = await direct(grant, text);
      expect(replay.status).toBe(503);
      expect(replay.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = await replay.json();
      expect(body).toMatchObject({ status: 503, code: 'authorization_unavailable' });
      expect(JSON.stringify(body)).not.toContain('Zebracanary');
    }
    expect(usageOf(key.org).map((u) => u.tokens)).toEqual([tokens]);
  });

  it('is refused on another target: a query string added, another path', async () => {
    const key = orgWithKey(stack, 'retargeted');
    const grant = await grantFor(key);
    for (const path of ['/v1/embeddings?x=1', '/v1/embeddings/']) {
      const res = await direct(grant, CANARY, path);
      expect([401, 404]).toContain(res.status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    // The grant itself was never used: it still serves its own request, once.
    expect((await direct(grant, CANARY)).status).toBe(200);
    expect(usageOf(key.org)).toHaveLength(1);
  });
});

describe('a hard-stop budget with one request left', () => {
  it('serves exactly one of 50 concurrent requests; the others are 429 rate_limit_exceeded with retry-after', async () => {
    const key = orgWithKey(stack, 'budgeted', { rpm: 10_000, tpm: 10_000_000 });
    const text = 'budget probe';
    const probe = await embed(key, text);
    expect(probe.status, probe.body).toBe(200);
    const tokens = probe.json().usage.total_tokens as number;
    // One more request of the same size fits; a second would not.
    stack.admin(['org', 'budget', key.org, '--tokens', String(2 * tokens), '--hard-stop']);
    // Each client retries a 503 as told (50 TLS handshakes and Checks at once can pass authz's
    // 500 ms Check timeout on a shared test machine); the budget must hold whatever the timing.
    const client = async () => {
      for (let attempt = 0; ; attempt += 1) {
        const answer = await embed(key, text);
        if (answer.status !== 503 || attempt === 10) return answer;
        await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
      }
    };
    const answers = await Promise.all(Array.from({ length: 50 }, client));
    const served = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(served).toHaveLength(1);
    expect(refused).toHaveLength(49);
    for (const r of refused) {
      expect(r.json()).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(usageOf(key.org).reduce((sum, u) => sum + u.tokens, 0)).toBe(2 * tokens);
  });
});
