/**
 * The embedder's Redis: the only module of the embedder that imports ioredis. It calls the
 * settlement functions (contract/redis/settlement.lua) as a Redis user that may do nothing else
 * (contract/redis/settlement-keys.ts's ACL rules): admit a grant's tokens, record its usage,
 * refund it, or read how it ended. Every command is bounded (command timeout, no offline queue,
 * no retries inside ioredis), so a stalled Redis surfaces as SettlementUnavailableError in time.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { GrantClaims } from '../../../contract/grant.js';
import { openRedis, type RedisTarget } from '../../../contract/redis-target.js';
import { settlementKeys, utcDay } from '../../../contract/redis/settlement-keys.js';
import type { UsageRecord } from '../../../contract/usage-record.js';

/** The GCRA period of every token budget: a minute, as authz's policy/limits.ts. */
const PERIOD_MS = 60_000;
const LIBRARY = 'ctg_settlement';

export interface SettlementStoreOptions extends RedisTarget {
  readonly prefix: string;
  /** Bound on each command. */
  readonly timeoutMs: number;
}

/** Redis could not answer in time, refused the command, or lacks the settlement functions. */
export class SettlementUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`settlement store unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'SettlementUnavailableError';
  }
}

/** Admit's answer; refusals are values. `redisNow` is Redis's clock when it decided. */
export type AdmitReply =
  | { readonly kind: 'admitted' | 'over_limit'; readonly tokensRemaining: number; readonly retryAfterMs: number; readonly redisNow: number }
  | { readonly kind: 'too_large' | 'expired' | 'used'; readonly redisNow: number };

/** How one record call ended: written (now or before), too late (never written), or not admitted. */
type RecordReply = 'recorded' | 'late' | 'not_admitted';

/** The usage of one answered request (contract/usage-record.ts; the grant gives org and key). */
type Usage = Pick<UsageRecord, 'requestId' | 'tokens' | 'time'>;

export interface SettlementStore {
  admit(grant: GrantClaims, model: string, tokens: number, now: number): Promise<AdmitReply>;
  /** Writes the usage unless Redis's clock is past `deadline` (then it never will). */
  record(grant: GrantClaims, model: string, usage: Usage, deadline: number): Promise<RecordReply>;
  refund(grant: GrantClaims, model: string, now: number): Promise<void>;
  /** The settlement's state: 'a:<n>' admitted, 'u:<n>' recorded, 'r:<n>' refunded, '' none. */
  status(grant: GrantClaims): Promise<string>;
  /** True while connected and the functions are loaded. */
  isReady(): boolean;
  close(): void;
}

const ADMIT_KINDS = ['admitted', 'over_limit', 'too_large', 'expired', 'used'] as const;
const RECORD_REPLIES: Record<string, RecordReply> = { '1': 'recorded', '0': 'recorded', '-1': 'late' };
const SOURCE = readFileSync(new URL('../../../contract/redis/settlement.lua', import.meta.url), 'utf8');

/** Opens the store; it connects in the background, reconnects by itself, and tracks readiness. */
export function openSettlementStore(options: SettlementStoreOptions): SettlementStore {
  const keys = settlementKeys(options.prefix);
  const redis: Redis = openRedis(options, {
    commandTimeout: options.timeoutMs,
    connectTimeout: Math.max(1000, options.timeoutMs),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  // Failures surface through the commands; the listener only keeps ioredis from printing them.
  redis.on('error', () => undefined);
  let libraryLoaded = false;
  const checkLibrary = async (): Promise<void> => {
    // A full Redis user (local development, tests) loads the library itself; the restricted
    // production user cannot (NOPERM) and waits for authz, which loads it on connect.
    await redis.call('FUNCTION', 'LOAD', 'REPLACE', SOURCE).catch(() => undefined);
    const found = (await redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', LIBRARY)) as unknown[];
    libraryLoaded = Array.isArray(found) && found.length > 0;
  };
  redis.on('ready', () => void checkLibrary().catch(() => (libraryLoaded = false)));
  redis.on('close', () => (libraryLoaded = false));
  const poll = setInterval(() => {
    if (redis.status === 'ready' && !libraryLoaded) void checkLibrary().catch(() => undefined);
  }, 1000);
  poll.unref();

  const fcall = async (name: string, keyNames: string[], args: Array<string | number>): Promise<unknown> => {
    try {
      return await redis.call('FCALL', name, keyNames.length, ...keyNames, ...args);
    } catch (error) {
      if (error instanceof Error && /function not found/i.test(error.message)) libraryLoaded = false;
      throw new SettlementUnavailableError(error);
    }
  };

  return {
    async admit(grant, model, tokens, now) {
      const reply = (await fcall(
        'ctg_admit',
        [keys.tokenBucket(grant.org, model), keys.settle(grant.uid)],
        [now, grant.tpm, tokens, PERIOD_MS, grant.exp],
      )) as number[];
      const [outcome, tokensRemaining, retryAfterMs, redisNow] = reply.map(Number) as [number, number, number, number];
      const kind = ADMIT_KINDS[outcome] ?? 'used';
      if (kind === 'admitted' || kind === 'over_limit') return { kind, tokensRemaining, retryAfterMs, redisNow };
      return { kind, redisNow };
    },
    async record(grant, model, usage, deadline) {
      const reply = await fcall(
        'ctg_record',
        [keys.settle(grant.uid), keys.usageStream, keys.usageDaily(grant.org, utcDay(usage.time))],
        [grant.org, grant.key, model, usage.requestId, usage.tokens, usage.time, deadline],
      );
      return RECORD_REPLIES[String(reply)] ?? 'not_admitted';
    },
    async refund(grant, model, now) {
      await fcall('ctg_refund', [keys.tokenBucket(grant.org, model), keys.settle(grant.uid)], [now, grant.tpm, PERIOD_MS]);
    },
    async status(grant) {
      try {
        return String(await redis.call('FCALL_RO', 'ctg_settle_status', 1, keys.settle(grant.uid)));
      } catch (error) {
        throw new SettlementUnavailableError(error);
      }
    },
    isReady: () => redis.status === 'ready' && libraryLoaded,
    close() {
      clearInterval(poll);
      redis.disconnect();
    },
  };
}
