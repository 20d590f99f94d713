/**
 * The embedder's autoscaling signals: queue depth beside the queue's limits (saturation is one
 * division), and the queue wait of served requests as a histogram.
 */
import { OnlineActivity } from '../../embedder/src/core/online-activity.js';
import { describe, expect, it } from 'vitest';
import type { EmbeddingEngine, EmbedOutcome, EmbedRequest } from '../../embedder/src/core/engine.js';
import { createEmbedderMetrics, measureEngine } from '../../embedder/src/telemetry/metrics.js';
import { metricValue } from '../support/embedder-app.js';

/** A request as the engine takes it; the fake engines here ignore it (its shape grows with the engine). */
const ANY_REQUEST = { inputs: ['a', 'b'], inputType: undefined, policy: 'reject', tenant: 'org-1' } as unknown as EmbedRequest;

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

  it('observes the queue wait of embedded requests from the engine timing, in seconds buckets', async () => {
    const metrics = createEmbedderMetrics({ inputs: 1, tokens: 1 });
    const outcomes: EmbedOutcome[] = [
      {
        kind: 'embedded',
        vectors: [],
        promptTokens: 4,
        timing: { tokenizeMs: 1, queueMs: 200, inferenceMs: 20 },
      } as unknown as EmbedOutcome,
      { kind: 'overloaded', retryAfterMs: 1000 },
      { kind: 'embedded', vectors: [], promptTokens: 4 } as unknown as EmbedOutcome,
    ];
    const engine: EmbeddingEngine = {
      modelId: 'm',
      maxTokens: 512,
      isReady: () => true,
      queuedInputs: () => 0,
      queuedTokens: () => 0,
      online: new OnlineActivity(),
      embed: async () => outcomes.shift()!,
      close: async () => undefined,
    };
    const measured = measureEngine(engine, metrics);
    for (let i = 0; i < 3; i++) await measured.embed(ANY_REQUEST);
    const text = await metrics.render();
    expect(metricValue(text, 'embedder_queue_wait_seconds_count')).toBe(1);
    expect(metricValue(text, 'embedder_queue_wait_seconds_sum')).toBeCloseTo(0.2);
    expect(metricValue(text, 'embedder_queue_wait_seconds_bucket', { le: '0.1' })).toBe(0);
    expect(metricValue(text, 'embedder_queue_wait_seconds_bucket', { le: '0.25' })).toBe(1);
  });
});
