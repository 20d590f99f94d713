/**
 * A Redis client whose every command is bounded, for the services' store modules (authz's and
 * admin's each build their one connection on it and register their own scripts): a command
 * timeout, no offline queue and no retries, so an unreachable or slow Redis fails within the
 * timeout with StoreUnavailableError instead of queueing or hanging.
 *
 * The timeout tells a slow Redis from a slow process. Node runs expired timers before it reads
 * sockets, so a process frozen past the timeout (a CPU limit's throttling, a burst that kept the
 * event loop busy) would otherwise fail commands whose replies already sit unread in the socket:
 * one starved moment taken for a dead Redis, failing every Check at once. So when the timeout
 * fires, guard looks once more after the socket has been read (setImmediate runs after the poll
 * phase) and fails only a command still unanswered then. A dead or stalled Redis with a process
 * that keeps up is still failed at the timeout, one event-loop turn later.
 */
import type { Redis } from 'ioredis';
import { isCluster, openRedis, primariesOf, type RedisSettings } from './redis-target.js';

/** Redis could not answer in time (unreachable, slow, or the connection dropped). */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`redis unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

/**
 * ioredis's own commandTimeout, as a multiple of the timeout guard() enforces: only for a
 * command sent outside guard(). Far beyond it, because ioredis's timer has the very fault
 * guard() avoids (it fires before a frozen process reads the reply).
 */
const BACKSTOP_FACTOR = 20;

/**
 * `work()`, rejected with "Command timed out" if it has not settled `ms` after it started and
 * still has not once the sockets have been read after that (the header says why).
 */
export function withDeadline<T>(work: () => Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (!settled) reject(new Error('Command timed out'));
        }),
      ms,
    );
    const finish = () => {
      settled = true;
      clearTimeout(timer);
    };
    new Promise<T>((started) => started(work())).then(
      (value) => {
        finish();
        resolve(value);
      },
      (error: unknown) => {
        finish();
        reject(error);
      },
    );
  });
}

/** Flat HGETALL-style reply ([field, value, …]) to an object. */
export function fromPairs(pairs: readonly string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[pairs[i]!] = pairs[i + 1]!;
  return hash;
}

/** One client under a key prefix, and the bounded-command guard; `R` is the client with its scripts. */
export class RedisConnection<R extends Redis = Redis> {
  /** Every key this connection's stores use starts with it. */
  readonly prefix: string;
  readonly redis: R;
  private readonly timeoutMs: number;

  constructor(options: RedisSettings) {
    this.prefix = options.prefix;
    this.timeoutMs = options.timeoutMs;
    const redis = openRedis(options, {
      // A backstop only: guard() bounds every command at timeoutMs itself (see above).
      commandTimeout: options.timeoutMs * BACKSTOP_FACTOR,
      connectTimeout: Math.max(1000, options.timeoutMs),
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: (times) => Math.min(50 * times, 1000),
    });
    // Connection errors surface through the commands that fail; the event needs a listener
    // only so ioredis does not print them.
    redis.on('error', () => {});
    this.redis = redis as R;
  }

  /** Runs one command within the timeout, turning any failure into StoreUnavailableError. */
  guard<T>(command: () => Promise<T>): Promise<T> {
    return withDeadline(command, this.timeoutMs).catch((error: unknown) => {
      throw new StoreUnavailableError(error);
    });
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

  /** True on a Redis Cluster (REDIS_CLUSTER_NODES): a command's keys must then share one slot. */
  get clustered(): boolean {
    return isCluster(this.redis);
  }

  /** The keys matching `pattern` (of `type` when given) on every primary: SCAN, node by node in a cluster. */
  async scanAll(pattern: string, type?: string): Promise<string[]> {
    const out: string[] = [];
    for (const node of primariesOf(this.redis)) {
      let cursor = '0';
      do {
        const [next, found] = await this.guard(() =>
          type === undefined
            ? node.scan(cursor, 'MATCH', pattern, 'COUNT', 500)
            : node.scan(cursor, 'MATCH', pattern, 'COUNT', 500, 'TYPE', type),
        );
        out.push(...found);
        cursor = next;
      } while (cursor !== '0');
    }
    return out;
  }

  /** Deletes every key under this connection's prefix (tests use their own prefix). */
  async purge(): Promise<number> {
    let deleted = 0;
    const found = await this.scanAll(`${this.prefix}*`);
    // In a cluster one UNLINK per key (keys of different slots cannot share a command).
    const chunk = this.clustered ? 1 : 500;
    for (let i = 0; i < found.length; i += chunk) {
      const keys = found.slice(i, i + chunk);
      deleted += await this.guard(() => this.redis.unlink(...keys));
    }
    return deleted;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
