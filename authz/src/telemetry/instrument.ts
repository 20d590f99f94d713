/**
 * Instrumentation by decoration: the Check handler, the store and the key cache are wrapped
 * from outside, so check.ts, usage.ts and store/redis.ts stay free of metrics code. Every
 * label comes from the handler's answer (outcome, catalogue code) or from a method name.
 */
import * as grpc from '@grpc/grpc-js';
import type { CheckRequest__Output } from '../../generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse } from '../../generated/envoy/service/auth/v3/CheckResponse.js';
import { KeyCache, type KeyCacheLimits } from '../store/key-cache.js';
import type { AuthzMetrics, CheckOutcome } from './metrics.js';

type CheckHandler = grpc.handleUnaryCall<CheckRequest__Output, CheckResponse>;

// Connection management, not commands: `ready` waits for a connection and would read as latency.
const NOT_COMMANDS = new Set(['ready', 'close', 'isReady', 'onReadyChange', 'constructor']);

/** The outcome of one Check from what the handler answered (pure). */
export function checkOutcome(
  error: grpc.ServiceError | Partial<grpc.StatusObject> | null,
  response: CheckResponse | undefined,
): { outcome: CheckOutcome; code: string } {
  if (error) return { outcome: error.code === grpc.status.UNAVAILABLE ? 'unavailable' : 'error', code: '' };
  // google.rpc.Code OK (0) lets the request through; a denial carries its catalogue code as the message.
  if ((response?.status?.code ?? 0) === 0) return { outcome: 'allowed', code: '' };
  return { outcome: 'denied', code: response?.status?.message ?? '' };
}

/** The Check handler, counting and timing every answer it gives. */
export function instrumentCheck(handler: CheckHandler, metrics: AuthzMetrics): CheckHandler {
  return (call, callback) => {
    const started = performance.now();
    handler(call, (error, response) => {
      metrics.observeCheck({ ...checkOutcome(error, response ?? undefined), seconds: (performance.now() - started) / 1000 });
      callback(error, response);
    });
  };
}

/** Told of every store command as it starts: its name (a RedisStore method) and its promise. */
export type CommandObserver = (command: string, result: Promise<unknown>, startedMs: number) => void;

/**
 * The store, with `observe` told of every command (method returning a Promise; an async
 * generator such as readUsage is not one and passes through). Method names are a fixed set.
 */
export function observeCommands<T extends object>(store: T, observe: CommandObserver): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string' || NOT_COMMANDS.has(property)) return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result: unknown = value.apply(target, args);
        if (result instanceof Promise) observe(property, result, started);
        return result;
      };
    },
  });
}

/** The store, with every command timed and its failures counted. */
export function instrumentStore<T extends object>(store: T, metrics: AuthzMetrics): T {
  return observeCommands(store, (command, result, started) => {
    const observe = (failed: boolean): void => metrics.observeStoreCommand(command, (performance.now() - started) / 1000, failed);
    result.then(
      () => observe(false),
      () => observe(true),
    );
  });
}

/** A KeyCache that counts each lookup by how it was answered (hit, miss, merged, shed). */
export class InstrumentedKeyCache extends KeyCache {
  constructor(ttlMs: number, metrics: AuthzMetrics, limits: Partial<KeyCacheLimits> = {}) {
    super(ttlMs, limits, (result) => metrics.observeKeyLookup(result));
  }
}
