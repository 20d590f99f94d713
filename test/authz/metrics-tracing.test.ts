/**
 * authz's spans through the real gRPC server over the real Redis, with an in-memory exporter:
 * a Check continues the traceparent Envoy sends in the call's metadata, its Redis commands are
 * its children, the outcome and catalogue code are attributes, an outage marks the spans as
 * errors, and nothing the caller sent (key, path, headers) is in any span.
 */
import * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { protos } from '../../authz/src/edge/protos.js';
import { bindServer, createServer } from '../../authz/src/edge/server.js';
import { createStore, type RedisStore } from '../../authz/src/store/redis.js';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import type { CheckRequest } from '../../authz/generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse__Output } from '../../authz/generated/envoy/service/auth/v3/CheckResponse.js';
import pino from 'pino';
import { callerMetadata, envoyCheck, testConfig } from '../support/grpc-authz.js';
import { deadPort } from '../support/redis-proxy.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const CANARY = `Zebracanary${randomBytes(4).toString('hex')}`;
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const tracer = trace.getTracer('authz');

interface Traced {
  readonly store: RedisStore;
  check(request: CheckRequest, traceparent?: string): Promise<CheckResponse__Output>;
  stop(): Promise<void>;
}

/** An authz server with a tracer, and a client that sends `traceparent` metadata as Envoy does. */
async function startTraced(redisUrl?: string): Promise<Traced> {
  const config = testConfig(testPrefix(), redisUrl ? { redisUrl, redisTimeoutMs: 500 } : {});
  const store = createStore({ url: config.redisUrl, prefix: config.redisKeyPrefix, timeoutMs: config.redisTimeoutMs });
  if (!redisUrl) await store.ready();
  const server = createServer({ config, store, log: pino({ level: 'silent' }), tracer });
  const port = await bindServer(server, '127.0.0.1', 0);
  const client = new (protos().envoy.service.auth.v3.Authorization)(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as AuthorizationClient;
  return {
    store,
    check: (request, traceparent) =>
      new Promise((resolve, reject) => {
        const metadata = callerMetadata();
        if (traceparent) metadata.set('traceparent', traceparent);
        client.Check(request, metadata, { deadline: Date.now() + 10_000 }, (error, response) =>
          error || !response ? reject(error) : resolve(response),
        );
      }),
    async stop() {
      client.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await store.close();
    },
  };
}

const exported = (spans: readonly ReadableSpan[]) => JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.status]));
const traceparent = (traceId: string, parentId: string) => `00-${traceId}-${parentId}-01`;

afterAll(() => provider.shutdown());
beforeEach(() => exporter.reset());

describe('Check spans (real gRPC, real Redis)', () => {
  let authz: Traced;
  let key: string;
  beforeAll(async () => {
    authz = await startTraced();
    await addOrg(authz.store, 'acme');
    key = `Bearer ${(await addKey(authz.store, 'acme')).key}`;
  });
  afterAll(() => authz?.stop());

  it('an allowed Check continues the caller trace, with its Redis commands as children', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    await authz.check(envoyCheck({ authorization: key }), traceparent(traceId, parentId));
    const spans = exporter.getFinishedSpans();
    const check = spans.find((s) => s.name === 'authz Check')!;
    expect(check.spanContext().traceId).toBe(traceId);
    expect(check.parentSpanContext?.spanId).toBe(parentId);
    expect(check.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.method': 'Check',
      'authz.outcome': 'allowed',
      'rpc.grpc.status_code': 0,
    });
    const redis = spans.filter((s) => s.name.startsWith('redis '));
    expect(redis.map((s) => s.name).sort()).toEqual(['redis checkLimits', 'redis lookupKey']);
    for (const span of redis) {
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.parentSpanContext?.spanId).toBe(check.spanContext().spanId);
      expect(span.attributes).toMatchObject({ 'db.system': 'redis' });
    }
  });

  it('a denial carries its catalogue code; the caller text is in no span', async () => {
    const response = await authz.check(
      envoyCheck({ authorization: `Bearer ${CANARY}`, path: `/v1/${CANARY}`, headers: { 'x-gateway-model': CANARY, 'x-canary': CANARY } }),
      traceparent(randomBytes(16).toString('hex'), randomBytes(8).toString('hex')),
    );
    const code = (JSON.parse(response.denied_response!.body) as { code: string }).code;
    const spans = exporter.getFinishedSpans();
    expect(spans.find((s) => s.name === 'authz Check')!.attributes).toMatchObject({ 'authz.outcome': 'denied', 'authz.code': code });
    await authz.check(
      envoyCheck({ authorization: key, path: `/v1/embeddings?q=${CANARY}`, headers: { 'x-gateway-model': CANARY, 'x-canary': CANARY } }),
    );
    expect(exported(exporter.getFinishedSpans())).not.toContain(CANARY);
    expect(exported(exporter.getFinishedSpans())).not.toContain(key.slice('Bearer '.length));
  });

  it('a Check without traceparent starts a trace of its own', async () => {
    await authz.check(envoyCheck({ authorization: key }));
    const check = exporter.getFinishedSpans().find((s) => s.name === 'authz Check')!;
    expect(check.parentSpanContext).toBeUndefined();
  });
});

describe('Check spans while Redis is unreachable', () => {
  it('the Check and its Redis span are errors', async () => {
    const authz = await startTraced(`redis://127.0.0.1:${await deadPort()}`);
    try {
      await expect(authz.check(envoyCheck({ authorization: `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}` }))).rejects.toMatchObject({
        code: grpc.status.UNAVAILABLE,
      });
      const spans = exporter.getFinishedSpans();
      const check = spans.find((s) => s.name === 'authz Check')!;
      expect(check.attributes).toMatchObject({ 'authz.outcome': 'unavailable', 'rpc.grpc.status_code': grpc.status.UNAVAILABLE });
      expect(check.status.code).toBe(2); // SpanStatusCode.ERROR
      const lookup = spans.find((s) => s.name === 'redis lookupKey')!;
      expect(lookup.status).toMatchObject({ code: 2, message: 'store unavailable' });
      expect(lookup.parentSpanContext?.spanId).toBe(check.spanContext().spanId);
    } finally {
      await authz.stop();
    }
  });
});
