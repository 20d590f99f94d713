/**
 * Organizations and keys written through admin's store (the writer of contract/access-records.ts),
 * for in-process authz and embedder tests (the CLI's own tests go through the CLI).
 */
import type { KeyRecord, OrgRecord } from '../../contract/access-records.js';
import { hashSecret, mintKey } from '../../contract/api-key.js';
import { OrgStore } from '../../admin/src/store/organizations.js';
import type { RedisStore } from '../../authz/src/store/redis.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';

/** Creates an organization (served model, embeddings endpoint, default limits unless overridden). */
export async function addOrg(store: RedisStore, id: string, overrides: Partial<OrgRecord> = {}): Promise<OrgRecord> {
  const org: OrgRecord = { id, endpoints: ['embeddings'], models: [TEST_MODEL], rpm: null, tpm: null, createdAt: 0, ...overrides };
  await new OrgStore(store.connection).createOrg(org);
  return org;
}

/** Creates a key for `org` and returns the full key and its id. */
export async function addKey(store: RedisStore, org: string, overrides: Partial<KeyRecord> = {}): Promise<{ id: string; key: string }> {
  const minted = mintKey('CTG');
  await new OrgStore(store.connection).createKey({
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
