/**
 * authz's Admission service over real gRPC and Redis, through the embedder's own client: tokens
 * are charged all or nothing before any work, a request larger than the whole budget is told so,
 * usage is recorded exactly once per admission (retries included), refunds give tokens back, and
 * a ticket naming another organization's key is refused. Two replicas share one Redis exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageReports } from '../../authz/src/store/reports.js';
import type { AdmissionTicket } from '../../embedder/src/admission-client.js';
import { startAuthz, testConfig, TEST_MODEL, type RunningAuthz } from '../support/grpc-authz.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
let now = NOW;
const prefix = testPrefix();
let authz: RunningAuthz;
let key: string;
let seq = 0;

beforeAll(async () => {
  authz = await startAuthz(testConfig(prefix, { redisTimeoutMs: 5000 }), { clock: () => now });
  await addOrg(authz.store, 'acme', { tpm: 1000 });
  key = (await addKey(authz.store, 'acme')).id;
});

afterAll(async () => {
  await authz.store.purge();
  await authz.stop();
});

function ticket(tokens: number, overrides: Partial<AdmissionTicket> = {}): AdmissionTicket {
  seq += 1;
  return { admissionId: `adm-${seq}`, org: 'acme', keyId: key, model: TEST_MODEL, requestId: `req-${seq}`, tokens, ...overrides };
}

async function usageOf(org: string): Promise<{ requests: number; tokens: number }> {
  let requests = 0;
  let tokens = 0;
  for await (const entry of new UsageReports(authz.store.connection).readUsage({ org })) {
    requests += 1;
    tokens += entry.tokens;
  }
  return { requests, tokens };
}

describe('Admit', () => {
  it('charges all or nothing against the tokens-per-minute budget, then tells how long to wait', async () => {
    await addOrg(authz.store, 'tight', { tpm: 1000 });
    const k = (await addKey(authz.store, 'tight')).id;
    const at = (tokens: number) => ticket(tokens, { org: 'tight', keyId: k });
    expect(await authz.admission.admit(at(400))).toEqual({ kind: 'admitted', tpm: 1000, tokensRemaining: 600 });
    expect(await authz.admission.admit(at(400))).toEqual({ kind: 'admitted', tpm: 1000, tokensRemaining: 200 });
    expect(await authz.admission.admit(at(400))).toEqual({ kind: 'over_limit', tpm: 1000, tokensRemaining: 200, retryAfterMs: 12_000 });
    expect(await authz.admission.admit(at(200))).toMatchObject({ kind: 'admitted', tokensRemaining: 0 });
    now = NOW + 24_000;
    try {
      expect(await authz.admission.admit(at(400))).toMatchObject({ kind: 'admitted' });
    } finally {
      now = NOW;
    }
  });

  it('calls a request larger than the whole budget too_large', async () => {
    expect(await authz.admission.admit(ticket(1001))).toEqual({ kind: 'too_large', tpm: 1000 });
  });

  it('admits exactly the budget across 40 concurrent requests on two replicas sharing Redis', async () => {
    const other = await startAuthz(testConfig(prefix, { redisTimeoutMs: 5000 }), { clock: () => now });
    try {
      await addOrg(authz.store, 'shared', { tpm: 1000 });
      const k = (await addKey(authz.store, 'shared')).id;
      const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? authz : other).admission.admit(ticket(100, { org: 'shared', keyId: k }))));
      expect(outcomes.filter((o) => o.kind === 'admitted')).toHaveLength(10);
      expect(outcomes.filter((o) => o.kind === 'over_limit')).toHaveLength(30);
    } finally {
      await other.stop();
    }
  });

  it('refuses a ticket whose key belongs to another organization, or that is malformed', async () => {
    await addOrg(authz.store, 'other');
    await expect(authz.admission.admit(ticket(1, { org: 'other' }))).rejects.toThrow(/INVALID_ARGUMENT|does not belong/);
    await expect(authz.admission.admit(ticket(1, { org: 'acme', keyId: 'NOSUCHKEYAAA' }))).rejects.toThrow();
    await expect(authz.admission.admit(ticket(1, { requestId: 'has space' }))).rejects.toThrow();
  });
});

describe('Record and Refund', () => {
  it('records exactly once per admission, however often it is retried', async () => {
    await addOrg(authz.store, 'billed');
    const k = (await addKey(authz.store, 'billed')).id;
    const once = ticket(42, { org: 'billed', keyId: k });
    await Promise.all([authz.admission.record(once), authz.admission.record(once), authz.admission.record(once)]);
    await authz.admission.record(ticket(8, { org: 'billed', keyId: k }));
    expect(await usageOf('billed')).toEqual({ requests: 2, tokens: 50 });
  });

  it('refund gives the tokens back to the budget', async () => {
    await addOrg(authz.store, 'refunded', { tpm: 500 });
    const k = (await addKey(authz.store, 'refunded')).id;
    const big = ticket(500, { org: 'refunded', keyId: k });
    expect(await authz.admission.admit(big)).toMatchObject({ kind: 'admitted', tokensRemaining: 0 });
    expect(await authz.admission.admit(ticket(1, { org: 'refunded', keyId: k }))).toMatchObject({ kind: 'over_limit' });
    await authz.admission.refund(big);
    expect(await authz.admission.admit(ticket(500, { org: 'refunded', keyId: k }))).toMatchObject({ kind: 'admitted' });
  });

  it('keeps only identifiers and counts in the usage record', async () => {
    await authz.admission.record(ticket(3, { requestId: 'CANARY-request-id' }));
    const entries = [];
    for await (const entry of new UsageReports(authz.store.connection).readUsage({ org: 'acme' })) entries.push(entry);
    expect(Object.keys(entries.at(-1)!).sort()).toEqual(['keyId', 'model', 'org', 'requestId', 'streamId', 'time', 'tokens']);
  });
});
