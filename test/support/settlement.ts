/**
 * Grants and settlements for tests: grants signed as authz signs them (a fresh uid each), their
 * grant records written as authz's Check writes them (settlement.lua's check), and the
 * embedder's own settlement store on the test Redis under a test's prefix, for tests that need
 * usage written the way the embedder writes it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { signGrant, type GrantClaims } from '../../contract/grant.js';
import { GRANT_HEADER } from '../../contract/headers.js';
import { settlementKeys, settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { USAGE_DAILY_FIELDS as DAILY, USAGE_FIELDS, type UsageRecord } from '../../contract/usage-record.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import { connectedStore, TEST_REDIS_URL } from './redis-store.js';

/** The grant secret of every test authz and embedder. */
export const TEST_GRANT_SECRET = 'embedder-and-authz-test-grant-secret-0123456789';

/**
 * A grant as authz signs it on an allowed Check; fresh uid, a minute to live, for POST
 * /v1/embeddings unless overridden (the test embedder's inject binds it to the request it
 * travels with: embedder-app.ts).
 */
export function testClaims(overrides: Partial<GrantClaims> = {}): GrantClaims {
  return {
    org: 'test-org',
    key: 'TESTKEYIDAAA',
    model: 'test-bert-1024',
    tpm: 1_000_000,
    uid: randomUUID(),
    exp: Date.now() + 60_000,
    method: 'POST',
    path: '/v1/embeddings',
    ...overrides,
  };
}

/** The grant header for `claims` (signed with TEST_GRANT_SECRET unless `secret` is given). */
export function grantHeader(claims: Partial<GrantClaims> = {}, secret = TEST_GRANT_SECRET): Record<string, string> {
  return { [GRANT_HEADER]: signGrant(testClaims(claims), secret) };
}

const clients = new Map<string, Redis>();

/** A full-user client on the test Redis (one per URL, for the test file's life). */
function fullClient(url = TEST_REDIS_URL): Redis {
  let client = clients.get(url);
  if (!client) {
    client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    clients.set(url, client);
  }
  return client;
}

/** The settlement's key names under `prefix` (the namespace read, or created as authz would). */
export async function testSettlementKeys(prefix: string, url = TEST_REDIS_URL): Promise<ReturnType<typeof settlementKeys>> {
  const redis = fullClient(url);
  await redis.set(settlementNsKey(prefix), randomBytes(16).toString('hex'), 'NX');
  return settlementKeys(prefix, (await redis.get(settlementNsKey(prefix)))!);
}

/**
 * Writes `claims`' grant record as authz's Check does (no hard-stop budget unless `budgetTokens`):
 * what an embedder test needs before it settles a grant it signed itself.
 */
export async function issueGrant(
  prefix: string,
  claims: GrantClaims,
  options: { budgetTokens?: number; url?: string } = {},
): Promise<void> {
  const keys = await testSettlementKeys(prefix, options.url);
  // Once: a record already issued (and perhaps used) stays as it is.
  if ((await fullClient(options.url).exists(keys.grant(claims.org, claims.uid))) === 1) return;
  const month = new Date(Date.now()).toISOString().slice(0, 7);
  await fullClient(options.url)
    .multi()
    .hset(keys.grant(claims.org, claims.uid), {
      org: claims.org,
      key: claims.key,
      model: claims.model,
      tpm: claims.tpm,
      method: claims.method,
      path: claims.path,
      cap: options.budgetTokens ?? -1,
      month,
      exp: claims.exp,
      state: 'i',
    })
    .pexpire(keys.grant(claims.org, claims.uid), Math.max(claims.exp - Date.now(), 0) + 5_000)
    .exec();
}

/**
 * Wraps an embedder's settlement store so every grant it admits has its record, as if authz had
 * checked it: for embedder tests that sign their own grants (testGrant) instead of asking authz.
 */
export function issuingGrants(store: SettlementStore, prefix: string, url?: string): SettlementStore {
  return {
    ...store,
    async admit(grant, model, tokens, now) {
      await issueGrant(prefix, grant, { ...(url ? { url } : {}) });
      return store.admit(grant, model, tokens, now);
    },
  };
}

/** The embedder's settlement store under `prefix`, connected and with its functions loaded (by an authz store). */
export async function testSettlementStore(prefix: string, timeoutMs = 2000): Promise<SettlementStore> {
  const authz = await connectedStore(prefix, TEST_REDIS_URL, 2000);
  const store = openSettlementStore({ url: TEST_REDIS_URL, prefix, timeoutMs });
  for (let i = 0; i < 100 && !store.isReady(); i += 1) await new Promise((r) => setTimeout(r, 50));
  if (!store.isReady()) throw new Error('the settlement store did not become ready');
  return {
    ...store,
    close: () => {
      store.close();
      void authz.close();
    },
  };
}

/** Writes one request's usage as the embedder does (a grant issued, admitted, then recorded). */
export async function recordTestUsage(
  store: SettlementStore,
  prefix: string,
  usage: Omit<UsageRecord, 'kind' | 'batch' | 'time'>,
): Promise<void> {
  const grant = testClaims({ org: usage.org, key: usage.keyId, model: usage.model, tpm: 1_000_000_000 });
  await issueGrant(prefix, grant);
  const admitted = await store.admit(grant, usage.model, usage.tokens, Date.now());
  if (admitted.kind !== 'admitted') throw new Error(`test usage not admitted: ${admitted.kind}`);
  const reply = await store.record(grant, usage.model, { requestId: usage.requestId, tokens: usage.tokens }, admitted.redisNow + 60_000);
  if (reply !== 'recorded') throw new Error(`test usage not recorded: ${reply}`);
}

/**
 * Seeds one usage record under `store`'s prefix, as the settlement writes it, at `usage.time`
 * (the record's `ts` and its daily counters' day): tests of reports and budgets need usage in
 * the past, which the settlement itself (Redis's clock) never writes.
 */
export async function recordUsage(
  store: { connection: { keys: { prefix: string }; redis: Redis } },
  usage: Omit<UsageRecord, 'kind' | 'batch'> & { kind?: UsageRecord['kind']; batch?: string },
): Promise<void> {
  await seedUsage(store.connection.keys.prefix, usage, store.connection.redis);
}

/** A record's stream fields and values, in the settlement's order (contract/usage-record.ts names them). */
function usageFields(record: UsageRecord): string[] {
  return (Object.keys(USAGE_FIELDS) as Array<keyof UsageRecord>).flatMap((part) => [USAGE_FIELDS[part], String(record[part])]);
}

/** recordUsage under `prefix`. */
export async function seedUsage(
  prefix: string,
  usage: Omit<UsageRecord, 'kind' | 'batch'> & { kind?: UsageRecord['kind']; batch?: string },
  redis: Redis = fullClient(),
): Promise<void> {
  await redis.set(settlementNsKey(prefix), randomBytes(16).toString('hex'), 'NX');
  const keys = settlementKeys(prefix, (await redis.get(settlementNsKey(prefix)))!);
  const day = new Date(usage.time).toISOString().slice(0, 10);
  const daily = keys.usageDaily(usage.org, day);
  await fullClient()
    .multi()
    .xadd(keys.usageStream(usage.org), '*', ...usageFields({ ...usage, kind: usage.kind ?? 'online', batch: usage.batch ?? '' }))
    .hincrby(daily, DAILY.requests, 1)
    .hincrby(daily, DAILY.tokens, usage.tokens)
    .hincrby(daily, DAILY.modelRequestsPrefix + usage.model, 1)
    .hincrby(daily, DAILY.modelTokensPrefix + usage.model, usage.tokens)
    .incrby(keys.month(usage.org, day.slice(0, 7)), usage.tokens)
    .exec();
}
