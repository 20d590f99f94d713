/**
 * The hot path's store: a key lookup and the request rate limit (Check), each one atomic round
 * trip through a Lua script. Tokens and usage are settled by the embedder (contract/redis/);
 * organizations and keys are written by admin (contract/access-records.ts); the budget read
 * (budgets.ts) shares connection.ts's one client and script registration.
 */
import { decodeKey, decodeOrg, type KeyRecord, type OrgRecord } from '../../../contract/access-records.js';
import { fromPairs } from '../../../contract/redis-connection.js';
import { PERIOD_MS, type LimitOutcome, type LimitReason, type Limits } from '../policy/limits.js';
import { openConnection, type Connection, type StoreOptions } from './connection.js';

export { StoreUnavailableError, type StoreOptions } from './connection.js';

const REASONS: readonly LimitReason[] = ['none', 'requests', 'tokens'];

/** Opens a store; it connects in the background and reconnects by itself. */
export function createStore(options: StoreOptions): RedisStore {
  return new RedisStore(openConnection(options));
}

export class RedisStore {
  constructor(readonly connection: Connection) {}

  /** True while the connection is up. */
  isReady(): boolean {
    return this.connection.isReady();
  }

  /** Calls `listener` when the connection comes up or goes down; returns the unsubscriber. */
  onReadyChange(listener: (ready: boolean) => void): () => void {
    return this.connection.onReadyChange(listener);
  }

  /** Resolves once connected; rejects with StoreUnavailableError after `waitMs`. */
  ready(waitMs?: number): Promise<void> {
    return this.connection.ready(waitMs);
  }

  /** The key record for `id` and its organization's record, in one round trip. */
  async lookupKey(id: string): Promise<{ key: KeyRecord | null; org: OrgRecord | null }> {
    const { redis, keys } = this.connection;
    const [key, org] = await this.connection.guard(() => redis.lookupKey(keys.key(id), keys.prefix));
    return { key: decodeKey(fromPairs(key)), org: decodeOrg(fromPairs(org)) };
  }

  /** Runs one Check's rate limit (check-limits.lua): one atomic round trip. */
  async checkLimits(org: string, model: string, now: number, limits: Limits): Promise<LimitOutcome> {
    const { redis, keys } = this.connection;
    const reply = await this.connection.guard(() =>
      redis.checkLimits(keys.requestBucket(org, model), keys.tokenBucket(org, model), now, limits.rpm, limits.tpm, PERIOD_MS),
    );
    const [allowed, reason, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs] = reply.map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    return {
      allowed: allowed === 1,
      reason: REASONS[reason] ?? 'requests',
      limits,
      requestsRemaining,
      requestsResetMs,
      tokensRemaining,
      retryAfterMs,
    };
  }

  /** Deletes every key under this store's prefix (tests use their own prefix). */
  purge(): Promise<number> {
    return this.connection.purge();
  }

  /** Closes the connection (shared with the budget store opened on it). */
  close(): Promise<void> {
    return this.connection.close();
  }
}
