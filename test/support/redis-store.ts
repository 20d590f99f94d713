/**
 * Test access to the shared Redis: every test run gets its own random key prefix, and purges
 * it afterwards (never FLUSHALL/FLUSHDB: other engineers' tests share this Redis).
 */
import { randomBytes } from 'node:crypto';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import { DEFAULT_REDIS_URL } from '../../contract/redis-target.js';

/**
 * The tests' Redis, one for every test: TEST_REDIS_URL, else REDIS_URL (what
 * scripts/stack/with-redis.sh starts a Redis at, and the stacks the tests start use), else the
 * usual local one. Two defaults apart once sent a test's seeded usage to another Redis than its stack's.
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || process.env.REDIS_URL || DEFAULT_REDIS_URL;

/** A fresh `authz-test:<random>:` prefix. */
export function testPrefix(): string {
  return `authz-test:${randomBytes(6).toString('hex')}:`;
}

/** A connected store under `prefix` (default: a fresh one). */
export async function connectedStore(prefix = testPrefix(), url = TEST_REDIS_URL, timeoutMs = 1000): Promise<RedisStore> {
  const store = createStore({ url, prefix, timeoutMs });
  await store.ready();
  return store;
}
