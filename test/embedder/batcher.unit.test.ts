import { describe, expect, it } from 'vitest';
import { selectBatch } from '../../embedder/src/core/batch-selection.js';
import { Batcher, type BatchLimits, type BatchStats } from '../../embedder/src/core/batcher.js';
import { fakeModel, row, tags } from '../support/fake-model.js';

// One tenant throughout this file, so its share is the whole queue; batcher-fairness.unit.test.ts has several.
const LIMITS: BatchLimits = {
  maxBatchTokens: 40,
  maxBatchSize: 4,
  maxQueueInputs: 12,
  maxQueueTokens: 200,
  maxTenantInputs: 12,
  maxTenantTokens: 200,
};

describe('selectBatch', () => {
  it('always takes the oldest input and then the closest lengths within the padded budget', () => {
    // budget 40: head 10 → the 10s and 9 fit (4 × 10 = 40); the 30 and 2 do not join.
    expect(selectBatch([10, 30, 9, 2, 10, 10], { maxBatchTokens: 40, maxBatchSize: 8 })).toEqual([0, 2, 4, 5]);
  });

  it('respects the size cap and the budget, never exceeding longest × count', () => {
    const lengths = [5, 5, 5, 5, 5, 5, 20, 1];
    for (const limits of [
      { maxBatchTokens: 1000, maxBatchSize: 3 },
      { maxBatchTokens: 24, maxBatchSize: 10 },
    ]) {
      const picked = selectBatch(lengths, limits);
      const longest = Math.max(...picked.map((i) => lengths[i]!));
      expect(picked[0]).toBe(0);
      expect(picked.length).toBeLessThanOrEqual(limits.maxBatchSize);
      expect(longest * picked.length).toBeLessThanOrEqual(limits.maxBatchTokens);
    }
    expect(selectBatch(lengths, { maxBatchTokens: 1000, maxBatchSize: 3 })).toEqual([0, 1, 2]);
  });

  it('takes a lone input longer than the budget rather than stalling', () => {
    expect(selectBatch([50, 50], { maxBatchTokens: 40, maxBatchSize: 4 })).toEqual([0]);
    expect(selectBatch([], { maxBatchTokens: 40, maxBatchSize: 4 })).toEqual([]);
  });
});

describe('Batcher', () => {
  it('merges inputs of concurrent requests into one batch and returns each request its own, in order', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const first = batcher.submit('org', [row(1)]); // goes straight to the idle model
    const second = batcher.submit('org', [row(2), row(3)]);
    const third = batcher.submit('org', [row(4)]);
    expect(model.calls).toHaveLength(1);
    await model.release();
    expect(model.calls[1]!.map((r) => r[0])).toEqual([2, 3, 4]); // queued while busy → one batch
    await model.release();
    expect(tags(((await first) as { vectors: Float32Array[] }).vectors)).toEqual([1]);
    expect(tags(((await second) as { vectors: Float32Array[] }).vectors)).toEqual([2, 3]);
    expect(tags(((await third) as { vectors: Float32Array[] }).vectors)).toEqual([4]);
  });

  it("spreads one request's inputs over several batches and reassembles them in input order", async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const lengths = [3, 10, 3, 10, 3, 10, 3, 10, 3];
    const outcome = batcher.submit(
      'org',
      lengths.map((len, i) => row(100 + i, len)),
    );
    for (let released = 0; released < model.calls.length; released++) await model.release();
    expect(model.calls.length).toBeGreaterThan(1);
    for (const call of model.calls) {
      expect(call.length).toBeLessThanOrEqual(LIMITS.maxBatchSize);
      expect(Math.max(...call.map((r) => r.length)) * call.length).toBeLessThanOrEqual(LIMITS.maxBatchTokens);
    }
    // Length grouping: no batch mixes the 3-token and 10-token inputs when it need not.
    expect(model.calls.filter((call) => new Set(call.map((r) => r.length)).size > 1).length).toBeLessThanOrEqual(1);
    const result = await outcome;
    expect(result.ok && tags(result.vectors)).toEqual(lengths.map((_, i) => 100 + i));
  });

  it('refuses with overloaded when the queue is full, never queueing without bound', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, { ...LIMITS, maxQueueInputs: 3 });
    const running = batcher.submit('org', [row(1)]);
    const queued = batcher.submit('org', [row(2), row(3)]);
    expect(await batcher.submit('org', [row(4), row(5)])).toMatchObject({
      ok: false,
      reason: 'overloaded',
      retryAfterMs: expect.any(Number),
    });
    expect(batcher.queuedInputs).toBe(2);
    expect(batcher.queuedTokens).toBe(6);
    const fits = batcher.submit('org', [row(6)]);
    for (let i = 0; i < 2; i++) await model.release();
    expect((await running).ok && (await queued).ok && (await fits).ok).toBe(true);
  });

  it('bounds queued tokens too, and admits any request when the queue is empty', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, { ...LIMITS, maxQueueTokens: 10 });
    const big = batcher.submit('org', [row(1, 30)]); // over the token bound, but nothing waits
    const waiting = batcher.submit('org', [row(2, 8)]);
    expect(await batcher.submit('org', [row(3, 3)])).toMatchObject({ ok: false, reason: 'overloaded', retryAfterMs: expect.any(Number) });
    await model.release();
    await model.release();
    expect((await big).ok && (await waiting).ok).toBe(true);
  });

  it('a model failure rejects only the requests in that batch, and the batcher keeps working', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const doomed = batcher.submit('org', [row(1), row(1, 30)]); // two batches: the second is left queued
    const bystander = batcher.submit('org', [row(2)]);
    const doomedFails = expect(doomed).rejects.toThrow('boom');
    await model.release(new Error('boom'));
    await doomedFails;
    // The doomed request's other input was dropped from the queue, so the next batch is the bystander's.
    expect(model.calls[1]!.map((r) => r[0])).toEqual([2]);
    await model.release();
    expect((await bystander).ok).toBe(true);
    const later = batcher.submit('org', [row(3)]);
    await model.release();
    expect(await later).toMatchObject({ ok: true });
  });

  it('drops the queued inputs of a request whose client went away', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const running = batcher.submit('org', [row(1)]);
    const gone = new AbortController();
    const abandoned = batcher.submit('org', [row(2), row(3)], gone.signal);
    gone.abort();
    expect(await abandoned).toEqual({ ok: false, reason: 'cancelled' });
    expect(batcher.queuedInputs).toBe(0);
    expect(batcher.queuedTokens).toBe(0);
    await model.release();
    expect((await running).ok).toBe(true);
    expect(model.calls).toHaveLength(1);
  });

  it('reports each model call: inputs and padded tokens (longest × inputs), failed calls too', async () => {
    const model = fakeModel();
    const reports: BatchStats[] = [];
    const batcher = new Batcher(model.embed, LIMITS, (stats) => reports.push(stats));
    const first = batcher.submit('org', [row(1, 5)]);
    const second = batcher.submit('org', [row(2, 4), row(3, 9), row(4, 2)]); // queued while the first runs: one batch
    expect(batcher.queuedTokens).toBe(15);
    const secondFails = expect(second).rejects.toThrow('boom');
    await model.release();
    await model.release(new Error('boom'));
    expect((await first).ok).toBe(true);
    await secondFails;
    expect(reports.map(({ size, paddedTokens }) => ({ size, paddedTokens }))).toEqual([
      { size: 1, paddedTokens: 5 },
      { size: 3, paddedTokens: 27 },
    ]);
    for (const { seconds } of reports) expect(seconds).toBeGreaterThanOrEqual(0);
  });
});
