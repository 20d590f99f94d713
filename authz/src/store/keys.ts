/**
 * The Redis key names authz uses, under REDIS_KEY_PREFIX: organizations and keys
 * (contract/access-records.ts), the request buckets Check limits, and the token buckets and
 * usage counters the settlement shares (contract/redis/settlement-keys.ts).
 */
import { accessKeys } from '../../../contract/access-records.js';
import { settlementKeys } from '../../../contract/redis/settlement-keys.js';

/** Names of every Redis key authz uses, under `prefix`. */
export function layout(prefix: string) {
  const settlement = settlementKeys(prefix);
  return {
    prefix,
    key: accessKeys(prefix).key,
    requestBucket: (org: string, model: string) => `${prefix}rl:req:${org}:${model}`,
    tokenBucket: settlement.tokenBucket,
    usageDaily: settlement.usageDaily,
  };
}

export type Layout = ReturnType<typeof layout>;
