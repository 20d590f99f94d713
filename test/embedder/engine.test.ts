/**
 * The engine's availability behaviour through the app: model not loaded, queue full, and the
 * event loop staying free while a large request is tokenized and embedded.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openSettlementStore } from '../../embedder/src/settlement/store.js';
import { TEST_GRANT_SECRET } from '../support/settlement.js';
import { buildApp } from '../../embedder/src/http/app.js';
import { createEngine } from '../../embedder/src/core/engine.js';
import { createEmbedderMetrics } from '../../embedder/src/telemetry/metrics.js';
import { readManifest } from '../../contract/model-manifest.js';
import { loadTokenizer } from '../../embedder/src/model/tokenizer.js';
import {
  testGrant,
  TEST_MODEL_ID,
  ensureTestModel,
  metricValue,
  scrapeMetrics,
  startTestEmbedder,
  type TestEmbedder,
} from '../support/embedder-app.js';
import { fixedSecret } from '../../contract/secrets.js';

const post = (embedder: TestEmbedder, input: string[]) =>
  embedder.app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    headers: testGrant(),
    payload: { model: TEST_MODEL_ID, input, encoding_format: 'base64' },
  });

describe('before the model is loaded', () => {
  it('/health is ok, /ready and /v1/embeddings are 503 model_not_ready with retry-after', async () => {
    const dir = ensureTestModel();
    const engine = createEngine({
      modelId: TEST_MODEL_ID,
      manifest: readManifest(dir),
      tokenizer: loadTokenizer(dir),
      embedRows: async () => {
        throw new Error('a model that is still loading is never called');
      },
      limits: {
        maxBatchTokens: 16_384,
        maxBatchSize: 32,
        maxQueueInputs: 100,
        maxQueueTokens: 10_000,
        maxTenantInputs: 100,
        maxTenantTokens: 10_000,
      },
      isReady: () => false,
    });
    // Never called: a model that is not ready refuses before any token is counted.
    const settlement = openSettlementStore({ url: 'redis://127.0.0.1:1', prefix: 'never:', timeoutMs: 100 });
    const config = {
      logLevel: 'silent',
      retryAfterSeconds: 7,
      grantSecret: fixedSecret(TEST_GRANT_SECRET),
      settlementTimeoutMs: 100,
      metricsToken: undefined,
    } as const;
    const app = buildApp({ config, engine, metrics: createEmbedderMetrics(), settlement });
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' });
    for (const res of [
      await app.inject({ method: 'GET', url: '/ready' }),
      await app.inject({ method: 'POST', url: '/v1/embeddings', headers: testGrant(), payload: { model: TEST_MODEL_ID, input: 'x' } }),
    ]) {
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('model_not_ready');
      expect(res.headers['retry-after']).toBe('7');
    }
    await app.close();
    settlement.close();
  });
});

describe('with a small queue', () => {
  let embedder: TestEmbedder;
  beforeAll(async () => {
    embedder = await startTestEmbedder(ensureTestModel(), {
      env: { BATCH_MAX_SIZE: '1', QUEUE_MAX_INPUTS: '10', QUEUE_MAX_TOKENS: '1000000', RETRY_AFTER_SECONDS: '2' },
    });
  });
  afterAll(async () => embedder?.close());

  it('a full queue answers 503 overloaded with retry-after, and serves again once drained', async () => {
    // Admitted although over the bound, because the queue was empty; one input a batch keeps it queued.
    const busy = post(
      embedder,
      Array.from({ length: 1000 }, (_, i) => `note ${i}`),
    ).then((res) => res);
    // Read through the queue gauges, which proves they follow the batcher.
    await vi.waitFor(async () => {
      const exposition = await scrapeMetrics(embedder.app);
      expect(metricValue(exposition, 'embedder_queue_inputs')).toBeGreaterThan(10);
      expect(metricValue(exposition, 'embedder_queue_tokens')).toBeGreaterThan(10);
    });
    const refused = await post(embedder, ['one more']);
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'overloaded', title: 'Service overloaded' });
    // The drain time of the organization's queued work (issue 25), not RETRY_AFTER_SECONDS.
    const ms = Number(refused.headers['retry-after-ms']);
    expect(ms).toBeGreaterThan(0);
    expect(refused.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(ms / 1000))));
    expect(metricValue(await scrapeMetrics(embedder.app), 'embedder_overloaded_total')).toBe(1);
    expect((await busy).statusCode).toBe(200);
    expect((await post(embedder, ['one more'])).statusCode).toBe(200);
    const after = await scrapeMetrics(embedder.app);
    expect(metricValue(after, 'embedder_queue_inputs')).toBe(0);
    expect(metricValue(after, 'embedder_queue_tokens')).toBe(0);
  });
});

describe('under a maximal request', () => {
  let embedder: TestEmbedder;
  beforeAll(async () => {
    embedder = await startTestEmbedder(ensureTestModel());
  });
  afterAll(async () => embedder?.close());

  it('answers /health while a maximal request (1,000 × 512 tokens) is tokenized and embedded', async () => {
    const input = Array.from({ length: 1000 }, () => Array.from({ length: 510 }, () => 'a').join(' '));
    let bigDone = false;
    const big = post(embedder, input).then((res) => {
      bigDone = true;
      return res;
    });
    // Let the big request be parsed and start tokenizing, then ask for health.
    await new Promise((resolve) => setImmediate(resolve));
    const health = await embedder.app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(bigDone).toBe(false);
    const res = await big;
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.total_tokens).toBe(512_000);
    expect(res.json().data).toHaveLength(1000);
  });
});
