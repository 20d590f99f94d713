/**
 * The hot path's store: a key lookup (a Lua script) and the Check itself (the settlement
 * library's check function: request rate, token room, hard-stop budget and the grant record the
 * embedder will settle), each one atomic round trip. Tokens and usage are settled by the
 * embedder on that grant record (contract/redis/settlement.lua); organizations and keys are
 * written by admin (contract/access-records.ts).
 */
import { decodeKey, decodeOrg, type KeyRecord, type OrgRecord } from '../../../contract/access-records.js';
import { fromPairs } from '../../../contract/redis-connection.js';
import { primariesOf } from '../../../contract/redis-target.js';
import { batchFunctionNames } from '../../../contract/redis/batch-keys.js';
import { PERIOD_MS } from '../../../contract/rate-period.js';
import type { LimitOutcome, LimitReason, Limits } from '../policy/limits.js';
import { settlementRouteKey } from '../../../contract/redis/settlement-keys.js';
import { openConnection, StoreUnavailableError, type Connection, type StoreOptions } from './connection.js';
import { SettlementSetup, type EmbedderUser } from './settlement.js';

export { StoreUnavailableError, type StoreOptions } from './connection.js';
export type { EmbedderUser } from './settlement.js';

const REASONS: readonly LimitReason[] = ['none', 'requests', 'tokens', 'budget'];

/** What authz grants on an allowed Check, written as the grant record the embedder settles. */
export interface GrantDraft {
  readonly uid: string;
  readonly org: string;
  readonly key: string;
  /** The model granted ('' when the organization may not use the one asked for). */
  readonly grantedModel: string;
  readonly method: string;
  readonly path: string;
  readonly exp: number;
}

/** The Check's outcome; for a budget refusal, the budget and the tokens used or reserved. */
export type CheckOutcome = LimitOutcome & { readonly budget?: { readonly monthlyTokens: number; readonly usedTokens: number } };

/**
 * Opens a store; it connects in the background and reconnects by itself, and keeps the
 * settlement's namespace, functions and (when given) the embedder's Redis user in place.
 */
export function createStore(options: StoreOptions, embedder?: EmbedderUser, onSetupError?: (error: unknown) => void): RedisStore {
  const connection = openConnection(options);
  return new RedisStore(connection, new SettlementSetup(connection, embedder, onSetupError));
}

export class RedisStore {
  constructor(
    readonly connection: Connection,
    readonly settlement: SettlementSetup,
  ) {}

  /** True while the connection is up. */
  isReady(): boolean {
    return this.connection.isReady();
  }

  /** Calls `listener` when the connection comes up or goes down; returns the unsubscriber. */
  onReadyChange(listener: (ready: boolean) => void): () => void {
    return this.connection.onReadyChange(listener);
  }

  /** Resolves once connected with the settlement in place; rejects with StoreUnavailableError after `waitMs`. */
  async ready(waitMs?: number): Promise<void> {
    await this.connection.ready(waitMs);
    await this.settlement.ensure(false);
  }

  /** The key record for `id` and its organization's record, in one round trip. */
  async lookupKey(id: string): Promise<{ key: KeyRecord | null; org: OrgRecord | null }> {
    const { redis, keys } = this.connection;
    if (this.connection.clustered) {
      // A key's record and its organization's live in different slots: two round trips.
      const keyRecord = decodeKey(await this.connection.guard(() => redis.hgetall(keys.key(id))));
      if (!keyRecord) return { key: null, org: null };
      return { key: keyRecord, org: decodeOrg(await this.connection.guard(() => redis.hgetall(keys.org(keyRecord.org)))) };
    }
    const [key, org] = await this.connection.guard(() => redis.lookupKey(keys.key(id), keys.prefix));
    return { key: decodeKey(fromPairs(key)), org: decodeOrg(fromPairs(org)) };
  }

  /**
   * Runs one Check on `model`'s buckets (settlement.lua's check: one atomic round trip) and,
   * when allowed, writes the grant record. Fails closed (StoreUnavailableError) until the
   * settlement library is loaded.
   */
  async checkLimits(grant: GrantDraft, model: string, now: number, limits: Limits): Promise<CheckOutcome> {
    const { redis } = this.connection;
    const args = [
      grant.uid,
      grant.key,
      model,
      grant.grantedModel,
      grant.method,
      // Without the query string: Redis holds identifiers and counts only, and a query may carry
      // anything a client put there (the signed grant still binds the whole target).
      grant.path.split('?', 1)[0] ?? '',
      now,
      limits.rpm,
      limits.tpm,
      PERIOD_MS,
      grant.exp,
    ];
    let reply: number[];
    try {
      // Bounded by guard() (REDIS_TIMEOUT_MS, and not failed while the process was merely frozen).
      reply = (
        (await this.connection.guard(() =>
          redis.call('FCALL', this.settlement.functions.check, 1, settlementRouteKey(this.connection.prefix, grant.org), ...args),
        )) as unknown[]
      ).map(Number);
    } catch (error) {
      // A Redis that lost its functions (restarted, flushed, a new primary) gets them back.
      const cause = error instanceof StoreUnavailableError ? error.cause : error;
      if (cause instanceof Error && /function not found/i.test(cause.message)) void this.settlement.ensure().catch(() => undefined);
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error);
    }
    const [allowed, reason, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs, monthlyTokens, usedTokens] = reply as [
      number,
      number,
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
      ...(reason === 3 ? { budget: { monthlyTokens, usedTokens } } : {}),
    };
  }

  /** Deletes every key under this store's prefix and its function libraries (tests use their own prefix). */
  async purge(): Promise<number> {
    const deleted = await this.connection.purge();
    for (const node of primariesOf(this.connection.redis))
      for (const library of [this.settlement.functions.library, batchFunctionNames(this.connection.prefix).library])
        await node.call('FUNCTION', 'DELETE', library).catch(() => undefined);
    return deleted;
  }

  /** Stops the settlement's upkeep and closes the connection. */
  close(): Promise<void> {
    this.settlement.stop();
    return this.connection.close();
  }
}
