/**
 * GET /metrics through inject() with the generated test model: the counters and histograms move
 * by exactly what the requests did, and the label mapping never takes request content.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedderMetrics, methodLabel, requestLabels, routeLabel } from '../../embedder/src/telemetry/metrics.js';
import {
  testGrant,
  TEST_MODEL_ID,
  ensureTestModel,
  metricValue,
  scrapeMetrics,
  startTestEmbedder,
  TEST_METRICS_TOKEN,
  type TestEmbedder,
} from '../support/embedder-app.js';

describe('label mapping', () => {
  it('routes are templates in OpenAPI style; no route is "unmatched"', () => {
    expect(routeLabel('/v1/embeddings')).toBe('/v1/embeddings');
    expect(routeLabel('/v1/models/:model_id')).toBe('/v1/models/{model_id}');
    expect(routeLabel(undefined)).toBe('unmatched');
    expect(routeLabel('')).toBe('unmatched');
  });

  it('methods come from a fixed list', () => {
    expect(methodLabel('POST')).toBe('POST');
    expect(methodLabel('PROPFIND')).toBe('other');
    expect(methodLabel('post')).toBe('other');
  });

  it('requestLabels: code is "" on success, the catalogue code otherwise', () => {
    expect(requestLabels({ route: '/v1/embeddings', method: 'POST', status: 200, seconds: 0.01, inputs: 2, tokens: 8 })).toEqual({
      route: '/v1/embeddings',
      method: 'POST',
      status: '200',
      code: '',
    });
    expect(requestLabels({ route: undefined, method: 'GET', status: 404, seconds: 0, code: 'not_found' })).toEqual({
      route: 'unmatched',
      method: 'GET',
      status: '404',
      code: 'not_found',
    });
  });

  it('each set of metrics has its own registry', async () => {
    const a = createEmbedderMetrics();
    const b = createEmbedderMetrics();
    a.observeRequest({ route: '/health', method: 'GET', status: 200, seconds: 0 });
    const labels = { route: '/health', method: 'GET', status: '200', code: '' };
    expect(metricValue(await a.render(), 'embedder_requests_total', labels)).toBe(1);
    expect(metricValue(await b.render(), 'embedder_requests_total', labels)).toBeUndefined();
  });
});

describe('GET /metrics', () => {
  let embedder: TestEmbedder;
  beforeAll(async () => {
    embedder = await startTestEmbedder(ensureTestModel());
  });
  afterAll(async () => embedder?.close());

  const ok = { route: '/v1/embeddings', method: 'POST', status: '200', code: '' };
  const invalid = { route: '/v1/embeddings', method: 'POST', status: '400', code: 'invalid_body' };
  const notFound = { route: 'unmatched', method: 'GET', status: '404', code: 'not_found' };
  /** Each sample watched, with how much the three requests below must move it. */
  const expected: Array<[string, Record<string, string>, number]> = [
    ['embedder_requests_total', ok, 1],
    ['embedder_requests_total', invalid, 1],
    ['embedder_requests_total', notFound, 1],
    ['embedder_request_duration_seconds_count', { route: '/v1/embeddings', status: '200' }, 1],
    ['embedder_request_duration_seconds_count', { route: '/v1/embeddings', status: '400' }, 1],
    ['embedder_request_duration_seconds_count', { route: 'unmatched', status: '404' }, 1],
    ['embedder_inputs_total', {}, 2],
    ['embedder_tokens_total', {}, 8],
    ['embedder_batch_size_count', {}, 1],
    ['embedder_batch_size_sum', {}, 2],
    ['embedder_batch_padded_tokens_count', {}, 1],
    ['embedder_batch_padded_tokens_sum', {}, 8],
    ['embedder_inference_duration_seconds_count', {}, 1],
    ['embedder_overloaded_total', {}, 0],
  ];
  const key = (name: string, labels: Record<string, string>) => `${name}${JSON.stringify(labels)}`;
  const read = (exposition: string) => expected.map(([name, labels]) => metricValue(exposition, name, labels) ?? 0);

  it('answers only with the metrics token: 401 without it or with another', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer another-token-of-enough-length-0123456789' },
      { authorization: TEST_METRICS_TOKEN },
    ]) {
      const res = await embedder.app.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body).not.toContain('embedder_');
    }
  });

  it('answers the registry content type, with Node process metrics', async () => {
    const res = await embedder.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TEST_METRICS_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(createEmbedderMetrics().contentType);
    expect(res.body).toContain('# TYPE embedder_requests_total counter');
    expect(res.body).toContain('process_cpu_seconds_total');
    expect((await embedder.app.inject({ method: 'POST', url: '/metrics' })).statusCode).toBe(405);
  });

  it('moves by exactly what an ok, an invalid_body and a 404 request did', async () => {
    const before = read(await scrapeMetrics(embedder.app));
    // "heart attack" is 4 tokens with [CLS] and [SEP]; two of them go to the model as one batch.
    const res = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: testGrant(),
      payload: { model: TEST_MODEL_ID, input: ['heart attack', 'heart attack'] },
    });
    expect(res.statusCode).toBe(200);
    expect(
      (
        await embedder.app.inject({
          method: 'POST',
          url: '/v1/embeddings',
          headers: testGrant(),
          payload: { model: TEST_MODEL_ID, input: '' },
        })
      ).statusCode,
    ).toBe(400);
    expect((await embedder.app.inject({ method: 'GET', url: '/v1/nowhere/else?x=1' })).statusCode).toBe(404);
    const after = read(await scrapeMetrics(embedder.app));
    const moved = Object.fromEntries(expected.map(([name, labels], i) => [key(name, labels), after[i]! - before[i]!]));
    expect(moved).toEqual(Object.fromEntries(expected.map(([name, labels, delta]) => [key(name, labels), delta])));
  });

  it('reads empty queues at rest', async () => {
    const exposition = await scrapeMetrics(embedder.app);
    expect(metricValue(exposition, 'embedder_queue_inputs')).toBe(0);
    expect(metricValue(exposition, 'embedder_queue_tokens')).toBe(0);
  });
});
