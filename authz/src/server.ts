/**
 * Builds the authz gRPC server: Authorization/Check (Envoy), Admission (the embedder) and
 * grpc.health.v1.Health on one server, sharing one key cache. Returns it unstarted; only
 * main.ts binds a port.
 */
import * as grpc from '@grpc/grpc-js';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { AuthzConfig } from './config.js';
import { createAdmissionHandlers } from './admission.js';
import { createCheckHandler } from './check.js';
import { createHealthHandlers } from './health.js';
import { KeyCache } from './key-cache.js';
import type { AuthzMetrics } from './metrics.js';
import { InstrumentedKeyCache, instrumentAdmission, instrumentCheck, instrumentStore } from './metrics-instrument.js';
import { traceAdmission, traceCheck, traceStore } from './tracing.js';
import { protos } from './protos.js';
import type { RedisStore } from './store/redis.js';

export interface ServerDeps {
  readonly config: AuthzConfig;
  readonly store: RedisStore;
  readonly log: Logger;
  /** True once shutdown began: the health service then says NOT_SERVING. */
  readonly isDraining?: () => boolean;
  /** Milliseconds since the epoch; injected so tests can fix time. */
  readonly clock?: () => number;
  /** When given, Checks, Admission calls, store commands, usage writes and key-cache lookups are measured. */
  readonly metrics?: AuthzMetrics;
  /** When given, each Check and Admission call is a span with its Redis commands as children. */
  readonly tracer?: Tracer;
}

/** An unstarted gRPC server with every authz service added. */
export function createServer(deps: ServerDeps): grpc.Server {
  const clock = deps.clock ?? Date.now;
  const { config, log, metrics, tracer } = deps;
  let store = metrics ? instrumentStore(deps.store, metrics) : deps.store;
  if (tracer) store = traceStore(store, tracer);
  const keyCache = metrics ? new InstrumentedKeyCache(config.keyCacheTtlMs, metrics) : new KeyCache(config.keyCacheTtlMs);
  let check = createCheckHandler({ config, store, clock, log, keyCache });
  if (metrics) check = instrumentCheck(check, metrics);
  if (tracer) check = traceCheck(check, tracer);
  const loaded = protos();
  const server = new grpc.Server();
  server.addService(loaded.envoy.service.auth.v3.Authorization.service, { Check: check });
  let admission = createAdmissionHandlers({ config, store, clock, log, keyCache });
  if (metrics) admission = instrumentAdmission(admission, metrics);
  if (tracer) admission = traceAdmission(admission, tracer);
  server.addService(loaded.ctg.admission.v1.Admission.service, admission);
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
