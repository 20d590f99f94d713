/**
 * Grants and settlements for tests: grants signed as authz signs them (a fresh uid each), and
 * the embedder's own settlement store on the test Redis under a test's prefix, for tests that
 * need usage written the way the embedder writes it.
 */
import { randomUUID } from 'node:crypto';
import { signGrant, type GrantClaims } from '../../contract/grant.js';
import { GRANT_HEADER } from '../../contract/headers.js';
import type { UsageRecord } from '../../contract/usage-record.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_REDIS_URL } from './redis-store.js';

/** The grant secret of every test authz and embedder. */
export const TEST_GRANT_SECRET = 'embedder-and-authz-test-grant-secret-0123456789';

/** A grant as authz signs it on an allowed Check; fresh uid and a minute to live unless overridden. */
export function testClaims(overrides: Partial<GrantClaims> = {}): GrantClaims {
  return {
    org: 'test-org',
    key: 'TESTKEYIDAAA',
    model: 'test-bert-1024',
    tpm: 1_000_000,
    uid: randomUUID(),
    exp: Date.now() + 60_000,
    ...overrides,
  };
}

/** The grant header for `claims` (signed with TEST_GRANT_SECRET unless `secret` is given). */
export function grantHeader(claims: Partial<GrantClaims> = {}, secret = TEST_GRANT_SECRET): Record<string, string> {
  return { [GRANT_HEADER]: signGrant(testClaims(claims), secret) };
}

/** The embedder's settlement store under `prefix`, connected and with its functions loaded. */
export async function testSettlementStore(prefix: string, timeoutMs = 2000): Promise<SettlementStore> {
  const store = openSettlementStore({ url: TEST_REDIS_URL, prefix, timeoutMs });
  for (let i = 0; i < 100 && !store.isReady(); i += 1) await new Promise((r) => setTimeout(r, 50));
  if (!store.isReady()) throw new Error('the settlement store did not become ready');
  return store;
}

/** Writes one request's usage as the embedder does (admit, then record), at `time`. */
export async function recordTestUsage(store: SettlementStore, usage: UsageRecord): Promise<void> {
  const grant = testClaims({ org: usage.org, key: usage.keyId, model: usage.model, tpm: 1_000_000_000 });
  // Charged now (the bucket's clock); recorded at `time` (the usage's day).
  const admitted = await store.admit(grant, usage.model, usage.tokens, Date.now());
  if (admitted.kind !== 'admitted') throw new Error(`test usage not admitted: ${admitted.kind}`);
  const reply = await store.record(
    grant,
    usage.model,
    { requestId: usage.requestId, tokens: usage.tokens, time: usage.time },
    admitted.redisNow + 60_000,
  );
  if (reply !== 'recorded') throw new Error(`test usage not recorded: ${reply}`);
}

const recorders = new Map<string, Promise<SettlementStore>>();

/**
 * Writes one request's usage under `store`'s prefix as the embedder does (for tests that seed
 * usage): one settlement store per prefix, kept for the test file's life.
 */
export async function recordUsage(store: { connection: { keys: { prefix: string } } }, usage: UsageRecord): Promise<void> {
  const prefix = store.connection.keys.prefix;
  if (!recorders.has(prefix)) recorders.set(prefix, testSettlementStore(prefix));
  await recordTestUsage(await (recorders.get(prefix) as Promise<SettlementStore>), usage);
}
