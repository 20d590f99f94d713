/**
 * Runs authz in-process for tests: a real gRPC server on port 0 over a real Redis (under the
 * test's own prefix), and real @grpc/grpc-js clients sending messages shaped as Envoy sends
 * them. Only the clock may be fixed.
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import type { AuthzConfig } from '../../authz/src/config.js';
import type { AuthzMetrics } from '../../authz/src/telemetry/metrics.js';
import { protos } from '../../authz/src/edge/protos.js';
import { bindServer, createServer } from '../../authz/src/edge/server.js';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import type { HealthClient } from '../../authz/generated/grpc/health/v1/Health.js';
import type { CheckRequest } from '../../authz/generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse__Output } from '../../authz/generated/envoy/service/auth/v3/CheckResponse.js';
import { TEST_REDIS_URL } from './redis-store.js';
import { TEST_GRANT_SECRET } from './settlement.js';
import { AUTHZ_CALLER_METADATA, GRANT_HEADER } from '../../contract/headers.js';
import { fixedSecret } from '../../contract/secrets.js';

export const TEST_MODEL = 'test-bert-1024';
export const TEST_SECRET = 'authz-tests-hmac-secret-0123456789abcdef';
/** The caller token the in-process authz requires and its Check client sends, as Envoy does. */
export const TEST_CALLER_TOKEN = 'authz-tests-caller-token-0123456789abcdef';

/** A complete config for an in-process authz under `prefix`. */
export function testConfig(prefix: string, overrides: Partial<AuthzConfig> = {}): AuthzConfig {
  return Object.freeze({
    host: '127.0.0.1',
    port: 0,
    redisUrl: TEST_REDIS_URL,
    redisKeyPrefix: prefix,
    // Generous: the 2-core machine is shared with the embedder's tests; only the unavailable
    // tests need a short bound, and they set their own.
    redisTimeoutMs: 2000,
    keyPrefix: 'CTG',
    keyHashSecret: TEST_SECRET,
    grantSecret: fixedSecret(TEST_GRANT_SECRET),
    grantTtlMs: 90_000,
    modelId: TEST_MODEL,
    defaultRpm: 600,
    defaultTpm: 1_000_000,
    // Off: these tests revoke and re-check keys under a fixed clock; check-cache.test.ts covers it.
    keyCacheTtlMs: 0,
    keyCacheMaxKeys: 10_000,
    keyCacheMaxUnknown: 50_000,
    keyLookupsMaxInFlight: 32,
    checksMaxInFlight: 256,
    callerToken: fixedSecret(TEST_CALLER_TOKEN),
    callerAuth: 'token',
    metricsToken: fixedSecret('authz-tests-metrics-token-0123456789abcdef'),
    drainMs: 0,
    logLevel: 'silent',
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    otlpEndpoint: undefined,
    ...overrides,
  });
}

export interface RunningAuthz {
  readonly address: string;
  readonly store: RedisStore;
  /** Check as Envoy calls it, with the caller token. */
  readonly check: (request: CheckRequest) => Promise<CheckResponse__Output>;
  /** The raw Check client, for calls with other metadata. */
  readonly auth: AuthorizationClient;
  readonly health: HealthClient;
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly clock?: () => number;
  readonly log?: Logger;
  /** Wait for Redis before resolving (false for dead-Redis tests). */
  readonly waitForRedis?: boolean;
  /** Measure Checks, store commands, usage writes and key lookups here. */
  readonly metrics?: AuthzMetrics;
  /** A Redis Cluster's seed nodes (config.redisUrl then gives only the user and password). */
  readonly clusterNodes?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
}

/** Starts an authz server with its own Redis connection and connects clients to it. */
export async function startAuthz(config: AuthzConfig, options: StartOptions = {}): Promise<RunningAuthz> {
  const store = createStore({
    url: config.redisUrl,
    prefix: config.redisKeyPrefix,
    timeoutMs: config.redisTimeoutMs,
    ...(options.clusterNodes ? { clusterNodes: options.clusterNodes } : {}),
  });
  if (options.waitForRedis !== false) await store.ready();
  const server = createServer({
    config,
    store,
    log: options.log ?? pino({ level: 'silent' }),
    clock: options.clock,
    metrics: options.metrics,
  });
  const port = await bindServer(server, '127.0.0.1', 0);
  const address = `127.0.0.1:${port}`;
  const loaded = protos();
  const credentials = grpc.credentials.createInsecure();
  const auth = new loaded.envoy.service.auth.v3.Authorization(address, credentials) as AuthorizationClient;
  const health = new loaded.grpc.health.v1.Health(address, credentials) as HealthClient;
  const check = (request: CheckRequest): Promise<CheckResponse__Output> =>
    new Promise((resolve, reject) => {
      auth.Check(request, callerMetadata(), { deadline: Date.now() + 10_000 }, (error, response) =>
        error || !response ? reject(error) : resolve(response),
      );
    });
  return {
    address,
    store,
    check,
    auth,
    health,
    stop: async () => {
      for (const client of [auth, health]) client.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await store.close();
    },
  };
}

/** The metadata Envoy's ext_authz sends with every Check: the caller token (`token` replaces it; null leaves it out). */
export function callerMetadata(token: string | null = TEST_CALLER_TOKEN): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (token !== null) metadata.set(AUTHZ_CALLER_METADATA, token);
  return metadata;
}

export interface EnvoyCheck {
  readonly authorization?: string;
  readonly method?: string;
  readonly path?: string;
  readonly headers?: Record<string, string>;
}

/** A CheckRequest as Envoy's ext_authz filter sends it: headers only, lower-cased. */
export function envoyCheck(request: EnvoyCheck): CheckRequest {
  const headers: Record<string, string> = {
    ':authority': 'localhost:8443',
    'content-type': 'application/json',
    'x-request-id': 'req-1',
    ...request.headers,
  };
  if (request.authorization !== undefined) headers.authorization = request.authorization;
  return {
    attributes: {
      request: {
        time: { seconds: Math.floor(Date.now() / 1000), nanos: 0 },
        http: {
          id: '123',
          method: request.method ?? 'POST',
          path: request.path ?? '/v1/embeddings',
          host: 'localhost:8443',
          scheme: 'https',
          protocol: 'HTTP/1.1',
          headers,
        },
      },
    },
  };
}

/** The headers of a CheckResponse's denied or ok part, as a plain map. */
export function headerMap(options: Array<{ header: { key: string; value: string } | null }> | undefined): Record<string, string> {
  return Object.fromEntries((options ?? []).map((option) => [option.header!.key, option.header!.value]));
}

/**
 * The grant a running authz (`address`) signs for `bearerKey` on a Check sent as Envoy sends it,
 * with the caller token read from `callerTokenFile`: what a captured grant looks like.
 */
export function grantFromCheck(address: string, callerTokenFile: string, bearerKey: string, path = '/v1/embeddings'): Promise<string> {
  const client = new (protos().envoy.service.auth.v3.Authorization)(address, grpc.credentials.createInsecure()) as AuthorizationClient;
  const metadata = new grpc.Metadata();
  metadata.set(AUTHZ_CALLER_METADATA, readFileSync(callerTokenFile, 'utf8').trim());
  return new Promise((resolve, reject) => {
    client.Check(
      envoyCheck({ authorization: `Bearer ${bearerKey}`, path }),
      metadata,
      { deadline: Date.now() + 10_000 },
      (error, response) => {
        client.close();
        const header = response?.ok_response?.headers?.find((h) => h.header?.key === GRANT_HEADER)?.header?.value;
        if (error || !header) reject(error ?? new Error(`no grant: ${JSON.stringify(response)}`));
        else resolve(header);
      },
    );
  });
}
