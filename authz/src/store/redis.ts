/**
 * The Check hot path's store: a key lookup, the rate limit and usage recording, each one
 * atomic round trip through a Lua script. Organization and key management live in admin.ts,
 * usage reports in reports.ts; all share connection.ts's one client and script registration.
 */
import type { KeyRecord, OrgRecord } from '../policy/access.js';
import { PERIOD_MS, type LimitOutcome, type LimitReason, type Limits } from '../policy/limits.js';
import type { UsageRecord } from '../policy/usage.js';
import { openConnection, type Connection, type StoreOptions } from './connection.js';
import { decodeKey, decodeOrg, fromPairs, utcDay } from './records.js';

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
    const reply = await this.connection.guard(() => redis.checkLimits(keys.requestBucket(org, model), keys.tokenBucket(org, model), now, limits.rpm, limits.tpm, PERIOD_MS));
    const [allowed, reason, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs] = reply.map(Number) as [number, number, number, number, number, number];
    return { allowed: allowed === 1, reason: REASONS[reason] ?? 'requests', limits, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs };
  }

  /** Records one request's usage and debits its tokens (record-usage.lua), atomically. */
  async recordUsage(usage: UsageRecord, defaultTpm: number): Promise<void> {
    const { redis, keys: k } = this.connection;
    await this.connection.guard(() =>
      redis.recordUsage(
        k.usageStream, k.usageDaily(usage.org, utcDay(usage.time)), k.tokenBucket(usage.org, usage.model), k.org(usage.org),
        usage.org, usage.keyId, usage.model, usage.requestId, usage.tokens, usage.time, defaultTpm, PERIOD_MS,
      ),
    );
  }

  /** Deletes every key under this store's prefix (tests use their own prefix). */
  purge(): Promise<number> {
    return this.connection.purge();
  }

  /** Closes the connection (shared with any admin or report store opened on it). */
  close(): Promise<void> {
    return this.connection.close();
  }
}
