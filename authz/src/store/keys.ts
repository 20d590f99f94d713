/**
 * The Redis key names authz uses under REDIS_KEY_PREFIX: organizations and keys
 * (contract/access-records.ts). Buckets, grant records and usage live under the settlement's
 * secret namespace (contract/redis/settlement-keys.ts; settlement.ts reads it).
 */
import { accessKeys } from '../../../contract/access-records.js';

/** Names of the Redis keys authz names itself, under `prefix`. */
export function layout(prefix: string) {
  return {
    prefix,
    key: accessKeys(prefix).key,
    /** An organization's record (read apart from its key's only on a Redis Cluster). */
    org: accessKeys(prefix).org,
  };
}

export type Layout = ReturnType<typeof layout>;
