/**
 * Instrumentation by decoration: the Check handler, the store and the key cache are wrapped
 * from outside, so check.ts, usage.ts and store/redis.ts stay free of metrics code. Every
 * label comes from the handler's answer (outcome, catalogue code) or from a method name.
 */
import * as grpc from '@grpc/grpc-js';
import type { CheckRequest__Output } from '../generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse } from '../generated/envoy/service/auth/v3/CheckResponse.js';
import { KeyCache, type KeyLookup } from './key-cache.js';
import type { AdmissionOutcome, AuthzMetrics, CheckOutcome } from './metrics.js';

type CheckHandler = grpc.handleUnaryCall<CheckRequest__Output, CheckResponse>;

// Connection management, not commands: `ready` waits for a connection and would read as latency.
const NOT_COMMANDS = new Set(['ready', 'close', 'isReady', 'onReadyChange', 'constructor']);

/** The outcome of one Check from what the handler answered (pure). */
export function checkOutcome(error: grpc.ServiceError | Partial<grpc.StatusObject> | null, response: CheckResponse | undefined): { outcome: CheckOutcome; code: string } {
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
    result.then(() => observe(false), () => observe(true));
  });
}

/** How an Admission call ended (pure): Admit's decision, "ok", or the fault. */
export function admissionOutcome(error: Partial<grpc.StatusObject> | null, response: unknown): AdmissionOutcome {
  if (error) {
    if (error.code === grpc.status.INVALID_ARGUMENT) return 'invalid';
    return error.code === grpc.status.UNAVAILABLE ? 'unavailable' : 'error';
  }
  const decision = (response as { outcome?: unknown } | null | undefined)?.outcome;
  if (decision === 'OVER_LIMIT') return 'over_limit';
  if (decision === 'TOO_LARGE') return 'too_large';
  return 'ok';
}

/**
 * The Admission handlers, each call counted and timed by method and outcome. A Record is a
 * usage write: answered, it is written; a fault means the embedder's 200 cannot leave.
 */
export function instrumentAdmission(handlers: grpc.UntypedServiceImplementation, metrics: AuthzMetrics): grpc.UntypedServiceImplementation {
  return Object.fromEntries(Object.entries(handlers).map(([method, handler]) => [method, ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
    const started = performance.now();
    (handler as grpc.handleUnaryCall<unknown, unknown>)(call, (error, response) => {
      const outcome = admissionOutcome(error, response);
      metrics.observeAdmission(method, outcome, (performance.now() - started) / 1000);
      if (method === 'Record' && outcome !== 'invalid') metrics.observeUsageWrite(outcome === 'ok');
      callback(error, response);
    });
  }) as grpc.UntypedHandleCall]));
}

/** A KeyCache that counts hits (answered from the cache) and misses (loaded from Redis). */
export class InstrumentedKeyCache extends KeyCache {
  constructor(
    ttlMs: number,
    private readonly metrics: AuthzMetrics,
  ) {
    super(ttlMs);
  }

  override async lookup(id: string, now: number, load: (id: string) => Promise<KeyLookup>): Promise<KeyLookup> {
    let hit = true;
    const counted = (keyId: string): Promise<KeyLookup> => {
      hit = false;
      return load(keyId);
    };
    try {
      return await super.lookup(id, now, counted);
    } finally {
      this.metrics.observeKeyLookup(hit);
    }
  }
}
