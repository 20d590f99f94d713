/**
 * The hot path's store: a key lookup and the request rate limit (Check), the token admission,
 * refund and usage record (Admission), each one atomic round trip through a Lua script. Organization and key management live in admin.ts,
 * usage reports in reports.ts; all share connection.ts's one client and script registration.
 */
import type { KeyRecord, OrgRecord } from '../policy/access.js';
import { PERIOD_MS, type AdmissionDecision, type LimitOutcome, type LimitReason, type Limits } from '../policy/limits.js';
import type { UsageRecord } from '../policy/usage.js';
import { openConnection, type Connection, type StoreOptions } from './connection.js';
import { decodeKey, decodeOrg, fromPairs, utcDay } from './records.js';

export { StoreUnavailableError, type StoreOptions } from './connection.js';

const REASONS: readonly LimitReason[] = ['none', 'requests', 'tokens'];
const ADMISSION_OUTCOMES: readonly AdmissionDecision['outcome'][] = ['admitted', 'over_limit', 'too_large'];
/** A day: far beyond any retry of a Record call, short enough not to pile up. */
const RECORDED_MARK_TTL_S = 86_400;

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

  /** Charges a request's tokens, all or nothing (admit-tokens.lua): one atomic round trip. */
  async admitTokens(org: string, model: string, now: number, tpm: number, cost: number): Promise<Omit<AdmissionDecision, 'tat'>> {
    const { redis, keys } = this.connection;
    const reply = await this.connection.guard(() => redis.admitTokens(keys.tokenBucket(org, model), now, tpm, cost, PERIOD_MS));
    const [outcome, tokensRemaining, retryAfterMs] = reply.map(Number) as [number, number, number];
    return { outcome: ADMISSION_OUTCOMES[outcome] ?? 'too_large', tokensRemaining, retryAfterMs };
  }

  /** Gives back an admitted request's tokens (refund-tokens.lua). */
  async refundTokens(org: string, model: string, now: number, tpm: number, cost: number): Promise<void> {
    const { redis, keys } = this.connection;
    await this.connection.guard(() => redis.refundTokens(keys.tokenBucket(org, model), now, tpm, cost, PERIOD_MS));
  }

  /**
   * Records one answered request's usage once per admission (record-usage.lua), atomically;
   * false when it had been recorded before. The mark outlives any retry by far.
   */
  async recordUsage(usage: UsageRecord, admissionId: string): Promise<boolean> {
    const { redis, keys: k } = this.connection;
    const written = await this.connection.guard(() =>
      redis.recordUsage(
        k.usageRecorded(admissionId), k.usageStream, k.usageDaily(usage.org, utcDay(usage.time)),
        usage.org, usage.keyId, usage.model, usage.requestId, usage.tokens, String(usage.time), RECORDED_MARK_TTL_S,
      ),
    );
    return written === 1;
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
