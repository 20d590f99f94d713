/**
 * Builds the authz gRPC server: Authorization/Check (Envoy) and grpc.health.v1.Health.
 * The embedder never calls authz: it settles tokens and usage on Redis itself, acting on the
 * grant Check signs (contract/grant.ts, contract/redis/settlement.lua). Returns it unstarted;
 * only main.ts binds a port. Check answers only the caller holding the caller token
 * (caller.ts); health answers anyone.
 */
import * as grpc from '@grpc/grpc-js';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { AuthzConfig } from '../config.js';
import { admitChecks } from './admission.js';
import { requireCaller } from './caller.js';
import { createCheckHandler } from './check.js';
import { createHealthHandlers } from './health.js';
import { KeyCache } from '../store/key-cache.js';
import type { AuthzMetrics } from '../telemetry/metrics.js';
import { InstrumentedKeyCache, instrumentCheck, instrumentStore } from '../telemetry/instrument.js';
import { traceCheck, traceStore } from '../telemetry/tracing.js';
import { protos } from './protos.js';
import type { RedisStore } from '../store/redis.js';

export interface ServerDeps {
  readonly config: AuthzConfig;
  readonly store: RedisStore;
  readonly log: Logger;
  /** True once shutdown began: the health service then says NOT_SERVING. */
  readonly isDraining?: () => boolean;
  /** Milliseconds since the epoch; injected so tests can fix time. */
  readonly clock?: () => number;
  /** When given, Checks, store commands and key-cache lookups are measured. */
  readonly metrics?: AuthzMetrics;
  /** When given, each Check is a span with its Redis commands as children. */
  readonly tracer?: Tracer;
}

/** An unstarted gRPC server with every authz service added. */
export function createServer(deps: ServerDeps): grpc.Server {
  const clock = deps.clock ?? Date.now;
  const { config, log, metrics, tracer } = deps;
  // Fail closed: without a token nobody could be told apart from Envoy (unless the mesh does it).
  const callerToken = config.callerAuth === 'mesh' ? undefined : config.callerToken;
  if (config.callerAuth !== 'mesh' && !callerToken)
    throw new Error('authz needs a caller token (AUTHZ_CALLER_TOKEN or AUTHZ_CALLER_TOKEN_FILE)');
  let store = metrics ? instrumentStore(deps.store, metrics) : deps.store;
  if (tracer) store = traceStore(store, tracer);
  const limits = {
    maxKnown: config.keyCacheMaxKeys,
    maxUnknown: config.keyCacheMaxUnknown,
    maxUnknownInFlight: config.keyLookupsMaxInFlight,
  };
  const keyCache = metrics ? new InstrumentedKeyCache(config.keyCacheTtlMs, metrics, limits) : new KeyCache(config.keyCacheTtlMs, limits);
  let check = createCheckHandler({ config, store, clock, log, keyCache });
  // Inside the metrics, so Checks refused for overload count as `unavailable`.
  check = admitChecks(check, config.checksMaxInFlight);
  if (metrics) check = instrumentCheck(check, metrics);
  if (tracer) check = traceCheck(check, tracer);
  // Outermost, so a refused caller costs no span, no metric and no parsing beyond gRPC's own.
  if (callerToken) check = requireCaller(check, callerToken, metrics ? () => metrics.observeCallerRefused() : undefined);
  const loaded = protos();
  const server = new grpc.Server();
  server.addService(loaded.envoy.service.auth.v3.Authorization.service, { Check: check });
  server.addService(loaded.grpc.health.v1.Health.service, createHealthHandlers(store, deps.isDraining));
  return server;
}

/** Binds `server` on host:port (0 = any free port) and resolves with the bound port. */
export function bindServer(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });
}
