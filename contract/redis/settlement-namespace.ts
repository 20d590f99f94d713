/**
 * The settlement's secret namespace (settlement-keys.ts): created once, by whichever full Redis
 * user asks first (SET NX), and read back. authz renders it into the Lua libraries; admin reads
 * usage under it. The embedder's user cannot read it.
 */
import { randomBytes } from 'node:crypto';
import type { RedisConnection } from '../redis-connection.js';
import { NAMESPACE_RULE, settlementNsKey } from './settlement-keys.js';

/** The namespace under the connection's prefix, created when absent; throws when the key holds anything else. */
export async function readSettlementNamespace(connection: RedisConnection): Promise<string> {
  const { redis, prefix } = connection;
  const key = settlementNsKey(prefix);
  const ns = await connection.guard(async () => {
    await redis.set(key, randomBytes(16).toString('hex'), 'NX');
    return redis.get(key);
  });
  if (!ns || !NAMESPACE_RULE.test(ns)) throw new Error(`${key} does not hold a settlement namespace`);
  return ns;
}
