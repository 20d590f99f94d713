/**
 * The embedder's Redis: the only module of the embedder that imports ioredis. It calls the
 * settlement functions (contract/redis/settlement.lua) as a Redis user that may do nothing else
 * (contract/redis/settlement-keys.ts's ACL rules): admit a grant's tokens, record its usage,
 * refund it, or read how it ended. Every command is bounded (command timeout, no offline queue,
 * no retries inside ioredis), so a stalled Redis surfaces as SettlementUnavailableError in time.
 */
import type { Redis } from 'ioredis';
import type { GrantClaims } from '../../../contract/grant.js';
import { connectionFor, openRedis, type RedisTarget } from '../../../contract/redis-target.js';
import { PERIOD_MS } from '../../../contract/rate-period.js';
import { settlementFunctionNames, settlementRouteKey } from '../../../contract/redis/settlement-keys.js';
import type { UsageRecord } from '../../../contract/usage-record.js';

export interface SettlementStoreOptions extends RedisTarget {
  readonly prefix: string;
  /** Bound on each command. */
  readonly timeoutMs: number;
  /**
   * Replicas that must hold a usage record before its 200 (Redis WAIT after the record; 0: no
   * wait, a standalone Redis), and how long to wait for them. Fewer acknowledgements void the
   * record (ctg_void): the request is answered 503 and its tokens given back.
   */
  readonly minReplicas?: number;
  readonly waitMs?: number;
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
  | {
      readonly kind: 'over_budget';
      readonly budgetTokens: number;
      readonly usedTokens: number;
      readonly retryAfterMs: number;
      readonly redisNow: number;
    }
  | { readonly kind: 'too_large' | 'expired' | 'used' | 'invalid'; readonly redisNow: number };

/**
 * How one record call ended: written (now or before), too late (never written), not admitted,
 * or written and then voided because the replicas did not confirm it in time (never a 200).
 */
type RecordReply = 'recorded' | 'late' | 'not_admitted' | 'unreplicated';

/** The usage of one answered request (contract/usage-record.ts; the grant record gives org, key and model). */
type Usage = Pick<UsageRecord, 'requestId' | 'tokens'>;

/**
 * The settlement functions, by the grant's organization (its routing key) and uid only: the
 * functions read everything else (key, model, limits, budget) from the grant record authz wrote
 * at Check. `grant` is passed
 * whole so wrappers (metrics, tracing, tests) see what is settled.
 */
export interface SettlementStore {
  admit(grant: GrantClaims, model: string, tokens: number, now: number): Promise<AdmitReply>;
  /** Writes the usage unless Redis's clock is past `deadline` (then it never will). */
  record(grant: GrantClaims, model: string, usage: Usage, deadline: number): Promise<RecordReply>;
  refund(grant: GrantClaims, model: string, now: number): Promise<void>;
  /** The settlement's state: 'a:<n>' admitted, 'u:<n>' recorded, 'r:<n>' refunded, 'v:<n>' voided, 'i' issued, '' none. */
  status(grant: GrantClaims): Promise<string>;
  /** True while connected and the functions are loaded. */
  isReady(): boolean;
  close(): void;
}

const ADMIT_KINDS = ['admitted', 'over_limit', 'too_large', 'expired', 'used', 'invalid', 'over_budget'] as const;
const RECORD_REPLIES: Record<string, RecordReply> = { '1': 'recorded', '0': 'recorded', '-1': 'late' };

/** Opens the store; it connects in the background, reconnects by itself, and tracks readiness. */
export function openSettlementStore(options: SettlementStoreOptions): SettlementStore {
  const fn = settlementFunctionNames(options.prefix);
  const minReplicas = options.minReplicas ?? 0;
  const waitMs = options.waitMs ?? 500;
  const redis: Redis = openRedis(options, {
    commandTimeout: Math.max(options.timeoutMs, minReplicas > 0 ? waitMs + options.timeoutMs : 0),
    connectTimeout: Math.max(1000, options.timeoutMs),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  // Failures surface through the commands; the listener only keeps ioredis from printing them.
  redis.on('error', () => undefined);
  // The library is authz's to load (it renders the secret namespace in); this user may not list
  // functions, so readiness is learnt by calling one: the status of a uid never issued.
  let libraryLoaded = false;
  const probe = async (): Promise<void> => {
    await redis.call('FCALL_RO', fn.status, 1, settlementRouteKey(options.prefix, 'probe'), '00000000-0000-0000-0000-000000000000');
    libraryLoaded = true;
  };
  redis.on('ready', () => void probe().catch(() => (libraryLoaded = false)));
  redis.on('close', () => (libraryLoaded = false));
  const poll = setInterval(() => {
    if (redis.status === 'ready' && !libraryLoaded) void probe().catch(() => undefined);
  }, 1000);
  poll.unref();

  // Each call declares one key, the grant's organization's routing key (a Redis Cluster sends the
  // call to the primary holding that organization's settlement keys).
  const fcall = async (command: 'FCALL' | 'FCALL_RO', name: string, grant: GrantClaims, args: Array<string | number>): Promise<unknown> => {
    try {
      return await redis.call(command, name, 1, settlementRouteKey(options.prefix, grant.org), ...args);
    } catch (error) {
      if (error instanceof Error && /function not found/i.test(error.message)) libraryLoaded = false;
      throw new SettlementUnavailableError(error);
    }
  };

  return {
    async admit(grant, _model, tokens, now) {
      const reply = (await fcall('FCALL', fn.admit, grant, [grant.uid, tokens, now, PERIOD_MS])) as number[];
      const [outcome, tokensRemaining, retryAfterMs, redisNow, budgetTokens, usedTokens] = reply.map(Number) as [
        number,
        number,
        number,
        number,
        number,
        number,
      ];
      const kind = ADMIT_KINDS[outcome] ?? 'used';
      if (kind === 'admitted' || kind === 'over_limit') return { kind, tokensRemaining, retryAfterMs, redisNow };
      if (kind === 'over_budget') return { kind, budgetTokens, usedTokens, retryAfterMs, redisNow };
      return { kind, redisNow };
    },
    async record(grant, _model, usage, deadline) {
      const reply = RECORD_REPLIES[String(await fcall('FCALL', fn.record, grant, [grant.uid, usage.tokens, usage.requestId, deadline]))];
      if (reply !== 'recorded' || minReplicas === 0) return reply ?? 'not_admitted';
      // Durable before the 200: the record must reach `minReplicas` replicas, or it is taken back.
      let acked = 0;
      try {
        // On a cluster, the connection to the primary that took the record (WAIT counts the
        // replicas of the connection's own writes); none known: unconfirmed, so voided.
        const primary = connectionFor(redis, settlementRouteKey(options.prefix, grant.org));
        acked = primary ? Number(await primary.call('WAIT', minReplicas, waitMs)) : 0;
      } catch {
        acked = 0;
      }
      if (acked >= minReplicas) return 'recorded';
      await fcall('FCALL', fn.void, grant, [grant.uid, Date.now(), PERIOD_MS]);
      return 'unreplicated';
    },
    async refund(grant, _model, now) {
      await fcall('FCALL', fn.refund, grant, [grant.uid, now, PERIOD_MS]);
    },
    async status(grant) {
      return String(await fcall('FCALL_RO', fn.status, grant, [grant.uid]));
    },
    isReady: () => redis.status === 'ready' && libraryLoaded,
    close() {
      clearInterval(poll);
      redis.disconnect();
    },
  };
}
