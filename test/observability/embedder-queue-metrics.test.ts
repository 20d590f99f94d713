/**
 * The embedder's autoscaling signals: queue depth beside the queue's limits (saturation is one
 * division), and the queue wait of served requests as a histogram.
 */
import { describe, expect, it } from 'vitest';
import { createEmbedderMetrics } from '../../embedder/src/metrics.js';
import { metricValue } from '../support/embedder-app.js';

describe('embedder queue metrics', () => {
  it('exports the queue limits beside the depth read at scrape time', async () => {
    const metrics = createEmbedderMetrics({ inputs: 2000, tokens: 262_144 });
    metrics.watchQueue(() => ({ inputs: 500, tokens: 65_536 }));
    const text = await metrics.render();
    expect(metricValue(text, 'embedder_queue_max_inputs')).toBe(2000);
    expect(metricValue(text, 'embedder_queue_max_tokens')).toBe(262_144);
    expect(metricValue(text, 'embedder_queue_inputs')! / metricValue(text, 'embedder_queue_max_inputs')!).toBe(0.25);
    expect(metricValue(text, 'embedder_queue_tokens')! / metricValue(text, 'embedder_queue_max_tokens')!).toBe(0.25);
  });

  it('observes the queue wait of 200 responses only, in seconds buckets', async () => {
    const metrics = createEmbedderMetrics({ inputs: 1, tokens: 1 });
    metrics.observeRequest({ route: '/v1/embeddings', method: 'POST', status: 200, seconds: 0.3, inputs: 1, tokens: 4, queueSeconds: 0.2 });
    metrics.observeRequest({ route: '/v1/embeddings', method: 'POST', status: 503, seconds: 0.01, code: 'overloaded', queueSeconds: 0 });
    const text = await metrics.render();
    expect(metricValue(text, 'embedder_queue_wait_seconds_count')).toBe(1);
    expect(metricValue(text, 'embedder_queue_wait_seconds_sum')).toBeCloseTo(0.2);
    expect(metricValue(text, 'embedder_queue_wait_seconds_bucket', { le: '0.1' })).toBe(0);
    expect(metricValue(text, 'embedder_queue_wait_seconds_bucket', { le: '0.25' })).toBe(1);
  });
});
