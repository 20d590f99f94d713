/**
 * Builds the authz gRPC server: Authorization/Check (Envoy), Admission (the embedder) and
 * grpc.health.v1.Health on one server, sharing one key cache. Returns it unstarted; only
 * main.ts binds a port.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { AuthzConfig } from './config.js';
import { createAdmissionHandlers } from './admission.js';
import { createCheckHandler } from './check.js';
import { createHealthHandlers } from './health.js';
import { KeyCache } from './key-cache.js';
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
}

/** An unstarted gRPC server with every authz service added. */
export function createServer(deps: ServerDeps): grpc.Server {
  const clock = deps.clock ?? Date.now;
  const { config, store, log } = deps;
  const loaded = protos();
  const server = new grpc.Server();
  const keyCache = new KeyCache(config.keyCacheTtlMs);
  server.addService(loaded.envoy.service.auth.v3.Authorization.service, {
    Check: createCheckHandler({ config, store, clock, log, keyCache }),
  });
  server.addService(loaded.ctg.admission.v1.Admission.service, createAdmissionHandlers({ config, store, clock, log, keyCache }));
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
