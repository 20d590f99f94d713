/**
 * The one Redis connection every store module shares: the only place a client is created and
 * the Lua scripts are registered (once, with defineCommand). Every command is bounded: a
 * command timeout, no offline queue and no retries, so an unreachable or slow Redis fails within
 * REDIS_TIMEOUT_MS with StoreUnavailableError instead of queueing or hanging.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { layout, type Layout } from './records.js';
import { openRedis, type RedisTarget } from '../../../contract/redis-target.js';

/** Where Redis is (a URL, or Sentinel), the key prefix, and the bound on every command. */
export interface StoreOptions extends RedisTarget {
  readonly prefix: string;
  readonly timeoutMs: number;
}

/** Redis could not answer in time (unreachable, slow, or the connection dropped). */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`redis unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

/** The Lua scripts beside this file, as commands on the client. */
export interface Scripts {
  lookupKey(key: string, prefix: string): Promise<[string[], string[]]>;
  checkLimits(requests: string, tokens: string, now: number, rpm: number, tpm: number, period: number): Promise<number[]>;
  appendAudit(stream: string, head: string, ...args: string[]): Promise<string | null>;
}

const SCRIPTS: ReadonlyArray<[keyof Scripts, string, number]> = [
  ['lookupKey', 'lookup-key', 1],
  ['checkLimits', 'check-limits', 2],
  ['appendAudit', 'append-audit', 2],
];

const script = (file: string): string => readFileSync(new URL(`./${file}.lua`, import.meta.url), 'utf8');
/** The settlement functions the embedder calls; authz, a full Redis user, loads them. */
const SETTLEMENT_LIBRARY = readFileSync(new URL('../../../contract/redis/settlement.lua', import.meta.url), 'utf8');
/** The Batch API's functions (queue, per-line settlement), loaded beside them. */
const BATCH_LIBRARY = readFileSync(new URL('../../../contract/redis/batch.lua', import.meta.url), 'utf8');

/** One client with the scripts registered, its key layout, and the bounded-command guard. */
export class Connection {
  readonly keys: Layout;
  readonly redis: Redis & Scripts;
  private readonly timeoutMs: number;

  constructor(options: StoreOptions) {
    this.keys = layout(options.prefix);
    this.timeoutMs = options.timeoutMs;
    const redis = openRedis(options, {
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(1000, options.timeoutMs),
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: (times) => Math.min(50 * times, 1000),
    });
    // Connection errors surface through the commands that fail; the event needs a listener
    // only so ioredis does not print them.
    redis.on('error', () => {});
    for (const [name, file, numberOfKeys] of SCRIPTS) redis.defineCommand(name, { numberOfKeys, lua: script(file) });
    this.redis = redis as Redis & Scripts;
    // On every (re)connect, so a Redis that lost its functions (a new primary, a flushed one) gets them back.
    redis.on('ready', () => void this.loadSettlementLibrary().catch(() => undefined));
  }

  /** Loads (or replaces) contract/redis/settlement.lua's function library. */
  async loadSettlementLibrary(): Promise<void> {
    await this.guard(() => this.redis.call('FUNCTION', 'LOAD', 'REPLACE', SETTLEMENT_LIBRARY));
    await this.guard(() => this.redis.call('FUNCTION', 'LOAD', 'REPLACE', BATCH_LIBRARY));
  }

  /** Runs one command, turning any failure into StoreUnavailableError. */
  async guard<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }

  /** True while the connection is up. */
  isReady(): boolean {
    return this.redis.status === 'ready';
  }

  /** Calls `listener` when the connection comes up or goes down; returns the unsubscriber. */
  onReadyChange(listener: (ready: boolean) => void): () => void {
    const up = (): void => listener(true);
    const down = (): void => listener(false);
    this.redis.on('ready', up).on('close', down);
    return () => void this.redis.off('ready', up).off('close', down);
  }

  /** Resolves once connected; rejects with StoreUnavailableError after `waitMs`. */
  async ready(waitMs = Math.max(2000, this.timeoutMs * 4)): Promise<void> {
    if (this.isReady()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new StoreUnavailableError(`not connected after ${waitMs} ms`));
      }, waitMs);
      const unsubscribe = this.onReadyChange((ready) => {
        if (!ready) return;
        clearTimeout(timer);
        unsubscribe();
        resolve();
      });
    });
  }

  /** Deletes every key under this connection's prefix (tests use their own prefix). */
  async purge(): Promise<number> {
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, found] = await this.guard(() => this.redis.scan(cursor, 'MATCH', `${this.keys.prefix}*`, 'COUNT', 500));
      if (found.length > 0) deleted += await this.guard(() => this.redis.unlink(...found));
      cursor = next;
    } while (cursor !== '0');
    return deleted;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** Opens a connection; it connects in the background and reconnects by itself. */
export function openConnection(options: StoreOptions): Connection {
  return new Connection(options);
}
