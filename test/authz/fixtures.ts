/**
 * Organizations and keys written straight through the store, for in-process authz tests (the
 * admin CLI's own tests go through the CLI).
 */
import type { KeyRecord, OrgRecord } from '../../authz/src/policy/access.js';
import { hashSecret, mintKey } from '../../authz/src/policy/keys.js';
import { AdminStore } from '../../authz/src/store/admin.js';
import type { RedisStore } from '../../authz/src/store/redis.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';

/** Creates an organization (served model, embeddings endpoint, default limits unless overridden). */
export async function addOrg(store: RedisStore, id: string, overrides: Partial<OrgRecord> = {}): Promise<OrgRecord> {
  const org: OrgRecord = { id, endpoints: ['embeddings'], models: [TEST_MODEL], rpm: null, tpm: null, createdAt: 0, ...overrides };
  await new AdminStore(store.connection).createOrg(org);
  return org;
}

/** Creates a key for `org` and returns the full key and its id. */
export async function addKey(store: RedisStore, org: string, overrides: Partial<KeyRecord> = {}): Promise<{ id: string; key: string }> {
  const minted = mintKey('CTG');
  await new AdminStore(store.connection).createKey({
    id: minted.id,
    org,
    name: 'test',
    hash: hashSecret(minted.id, minted.secret, TEST_SECRET),
    createdAt: 0,
    expiresAt: null,
    revoked: false,
    ...overrides,
  });
  return { id: minted.id, key: minted.key };
}
