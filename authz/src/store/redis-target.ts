/**
 * How the store reaches Redis: one URL, or the primary that Redis Sentinel names (ioredis asks
 * the sentinels, and again after a failover). Shared by the store and its persistence check.
 */
import { Redis, type RedisOptions } from 'ioredis';

/** Where Redis is. */
export interface RedisTarget {
  readonly url: string;
  /** When non-empty, the primary of `sentinelName` as these sentinels report it; `url` is unused. */
  readonly sentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly sentinelName?: string;
}

/** Opens a connection to the target with the caller's options. */
export function openRedis(target: RedisTarget, options: RedisOptions): Redis {
  if (!target.sentinels || target.sentinels.length === 0) return new Redis(target.url, options);
  return new Redis({
    ...options,
    sentinels: target.sentinels.map((s) => ({ ...s })),
    name: target.sentinelName ?? 'ctg',
    role: 'master',
    // Subscribes to the sentinels' +switch-master, so a promotion is noticed at once.
    failoverDetector: true,
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A demoted primary answers writes with READONLY: drop that connection and ask the
    // sentinels again. The failed command is not resent (it surfaces as unavailable: fail closed).
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  });
}
