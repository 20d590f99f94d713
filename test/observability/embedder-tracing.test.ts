/**
 * The embedder's spans, in process through inject() with the generated test model and an
 * in-memory exporter: a request continues the caller's traceparent, the engine's "embed" and
 * the "serialize" spans are its children, the engine's phase timings become child spans laid
 * end to end, and a canary input reaches no span name, attribute or event on success or on any
 * error path.
 */
import { OnlineActivity } from '../../embedder/src/core/online-activity.js';
import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../embedder/src/http/app.js';
import { loadConfig } from '../../embedder/src/config.js';
import { loadEngine, type EmbeddingEngine, type EmbedOutcome, type EmbedRequest } from '../../embedder/src/core/engine.js';
import { createEmbedderMetrics } from '../../embedder/src/telemetry/metrics.js';
import { registerTracing, traceEngine, traceSettlement, TRACER_NAME } from '../../embedder/src/telemetry/tracing.js';
import { openSettlementStore, type SettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_GRANT_SECRET } from '../support/settlement.js';
import { TEST_REDIS_URL } from '../support/redis-store.js';
import { ensureTestModel, startTestAuthz, testGrant, TEST_METRICS_TOKEN, TEST_MODEL_ID } from '../support/embedder-app.js';
import { issuingGrants } from '../support/settlement.js';
import type { RunningAuthz } from '../support/grpc-authz.js';

/** A request as the engine takes it; the fake engines here ignore it (its shape grows with the engine). */
const ANY_REQUEST = { inputs: ['a', 'b'], inputType: undefined, policy: 'reject', tenant: 'org-1' } as unknown as EmbedRequest;

const CANARY = `Zebracanary${randomBytes(4).toString('hex')}`;
const TRACE_ID = randomBytes(16).toString('hex');
const PARENT_ID = randomBytes(8).toString('hex');
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const tracer = trace.getTracer(TRACER_NAME);

let app: FastifyInstance;
let engine: EmbeddingEngine;
let authz: RunningAuthz;
let settlement: SettlementStore;

beforeAll(async () => {
  authz = await startTestAuthz();
  const config = loadConfig({
    MODEL_DIR: ensureTestModel(),
    LOG_LEVEL: 'silent',
    ORT_INTRA_OP_THREADS: '1',
    GRANT_SECRET: TEST_GRANT_SECRET,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: authz.store.connection.keys.prefix,
    METRICS_TOKEN: TEST_METRICS_TOKEN,
  });
  const loaded = loadEngine(config);
  engine = loaded.engine;
  settlement = issuingGrants(openSettlementStore({ ...config.redis, timeoutMs: 10_000 }), authz.store.connection.keys.prefix);
  app = buildApp({
    config,
    engine: traceEngine(engine, tracer),
    metrics: createEmbedderMetrics(),
    settlement: traceSettlement(settlement, tracer),
  });
  registerTracing(app, tracer);
  await loaded.ready;
});
afterAll(async () => {
  await app?.close();
  settlement?.close();
  await engine?.close();
  await authz?.store.purge();
  await authz?.stop();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const post = (body: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, ...testGrant(), ...headers },
  });

/** Everything a span exports that could carry text: name, attributes, events and status. */
const exported = (spans: readonly ReadableSpan[]) => JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.status]));
const byName = (spans: readonly ReadableSpan[], name: string) => spans.find((s) => s.name === name);

describe('request spans', () => {
  it('a 200 continues the caller trace: request span, with embed and serialize under it', async () => {
    const res = await post({ model: TEST_MODEL_ID, input: [CANARY, 'Afebrile.'] });
    expect(res.statusCode).toBe(200);
    const spans = exporter.getFinishedSpans();
    const server = byName(spans, 'POST /v1/embeddings')!;
    expect(server.spanContext().traceId).toBe(TRACE_ID);
    expect(server.parentSpanContext?.spanId).toBe(PARENT_ID);
    expect(server.attributes).toMatchObject({
      'http.route': '/v1/embeddings',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
    });
    const embed = byName(spans, 'embed')!;
    const serialize = byName(spans, 'serialize')!;
    for (const child of [embed, serialize]) {
      expect(child.spanContext().traceId).toBe(TRACE_ID);
      expect(child.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    }
    // Tokens are admitted inside the engine call, after tokenizing; usage is recorded before the 200 leaves.
    expect(byName(spans, 'settle admit')?.parentSpanContext?.spanId).toBe(embed.spanContext().spanId);
    expect(byName(spans, 'settle record')?.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(byName(spans, 'settle admit')!.attributes).toMatchObject({
      'db.operation.name': 'FCALL ctg_admit',
      'settlement.outcome': 'admitted',
    });
    expect(byName(spans, 'settle record')!.attributes).toMatchObject({ 'settlement.outcome': 'recorded' });
    expect(embed.attributes).toMatchObject({ 'embedder.inputs': 2, 'embedder.outcome': 'embedded' });
    expect(serialize.attributes).toMatchObject({ 'embedder.vectors': 2, 'embedder.encoding_format': 'float' });
    expect(exported(spans)).not.toContain(CANARY);
  });

  it('without a traceparent the request starts its own trace', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { 'content-type': 'application/json', ...testGrant() },
      payload: JSON.stringify({ model: TEST_MODEL_ID, input: 'x' }),
    });
    expect(res.statusCode).toBe(200);
    const server = byName(exporter.getFinishedSpans(), 'POST /v1/embeddings')!;
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.spanContext().traceId).not.toBe(TRACE_ID);
  });

  it('Prometheus scrapes and readiness probes make no spans', async () => {
    expect(
      (await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } })).statusCode,
    ).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('error paths: the span carries the status and catalogue code, never the canary', async () => {
    const replies = [
      await post({ model: TEST_MODEL_ID, input: CANARY, encoding_format: CANARY }),
      await post({ model: CANARY, input: CANARY }),
      await post({ model: TEST_MODEL_ID, input: `${CANARY} `.repeat(600) }),
      await post(`{"model": "${TEST_MODEL_ID}", "input": "${CANARY}`),
      await post(CANARY, { 'content-type': 'text/plain' }),
      await app.inject({ method: 'GET', url: `/v1/${CANARY}?q=${CANARY}`, headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` } }),
    ];
    expect(replies.map((r) => r.statusCode)).toEqual([400, 403, 400, 400, 400, 404]);
    const spans = exporter.getFinishedSpans();
    const servers = spans.filter((s) => s.attributes['http.response.status_code'] !== undefined);
    expect(servers.map((s) => s.attributes['http.response.status_code'])).toEqual([400, 403, 400, 400, 400, 404]);
    expect(servers.map((s) => s.attributes['error.type'])).toEqual([
      'invalid_body',
      'model_not_enabled',
      'invalid_request',
      'invalid_body',
      'invalid_body',
      'not_found',
    ]);
    expect(byName(spans, 'GET unmatched')).toBeDefined();
    expect(exported(spans)).not.toContain(CANARY);
  });
});

describe('traceEngine', () => {
  const fake = (outcome: EmbedOutcome): EmbeddingEngine => ({
    modelId: 'm',
    maxTokens: 512,
    isReady: () => true,
    queuedInputs: () => 0,
    queuedTokens: () => 0,
    online: new OnlineActivity(),
    embed: async () => outcome,
    close: async () => undefined,
  });

  it('turns the engine reported timing into phases under "embed": tokenize first, queue then inference last', async () => {
    const timing = { tokenizeMs: 2, queueMs: 30, inferenceMs: 12 };
    const outcome = { kind: 'embedded', vectors: [], promptTokens: 7, timing } as unknown as EmbedOutcome;
    await traceEngine(fake(outcome), tracer).embed(ANY_REQUEST);
    const spans = exporter.getFinishedSpans();
    const embed = byName(spans, 'embed')!;
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    const [tokenize, queue, inference] = ['tokenize', 'queue', 'inference'].map((name) => byName(spans, name)!);
    for (const phase of [tokenize, queue, inference]) expect(phase!.parentSpanContext?.spanId).toBe(embed.spanContext().spanId);
    expect([tokenize, queue, inference].map((s) => Math.round(ms(s!.endTime) - ms(s!.startTime)))).toEqual([2, 30, 12]);
    // Queue runs straight into inference (token admission sits between tokenize and queue).
    expect(Math.round(ms(queue!.endTime))).toBe(Math.round(ms(inference!.startTime)));
    expect(embed.attributes).toMatchObject({ 'embedder.tokens': 7, 'embedder.outcome': 'embedded' });
  });

  it('without a timing, "embed" has no phases', async () => {
    await traceEngine(fake({ kind: 'embedded', vectors: [], promptTokens: 3 } as unknown as EmbedOutcome), tracer).embed(ANY_REQUEST);
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['embed']);
  });

  it('a refusal is recorded as the outcome, with no phases', async () => {
    await traceEngine(fake({ kind: 'overloaded', retryAfterMs: 1000 }), tracer).embed(ANY_REQUEST);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['embed']);
    expect(spans[0]!.attributes).toMatchObject({ 'embedder.inputs': 2, 'embedder.outcome': 'overloaded' });
  });
});
