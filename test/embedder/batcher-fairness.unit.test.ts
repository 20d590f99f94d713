/**
 * The batcher between tenants (organizations): who leads each batch, in tokens; how a small
 * request from one tenant fares beside another's large one; per-tenant queue shares; timing.
 * Tags: tenant A's rows are 1000+i, B's 2000+i, C's 3000+i.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, type BatchLimits, type SubmitOutcome } from '../../embedder/src/core/batcher.js';
import { atOnce, fakeModel, row, tags } from '../support/fake-model.js';

// A budget of 40 padded tokens and 4 inputs a batch; shares large unless a test narrows them.
const LIMITS: BatchLimits = {
  maxBatchTokens: 40,
  maxBatchSize: 4,
  maxQueueInputs: 1000,
  maxQueueTokens: 100_000,
  maxTenantInputs: 500,
  maxTenantTokens: 50_000,
};

const rows = (base: number, count: number, length: number): number[][] => Array.from({ length: count }, (_, i) => row(base + i, length));
const tenantOf = (tag: number): string => 'ABC'[Math.floor(tag / 1000) - 1]!;
const vectorsOf = (outcome: SubmitOutcome): number[] => (outcome.ok ? tags(outcome.vectors) : []);

/** Tokens each tenant got in batch `i` of `model`. */
function tokensByTenant(model: ReturnType<typeof fakeModel>, i: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of model.calls[i]!) out[tenantOf(r[0]!)] = (out[tenantOf(r[0]!)] ?? 0) + r.length;
  return out;
}

describe('fair batching between tenants', () => {
  it("serves a small request in the batch after the running one, not after another tenant's large request", async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const big = batcher.submit('A', rows(1000, 40, 10)); // 10 batches of 4; the first starts at once
    const small = batcher.submit('B', [row(2000, 3)]);
    let smallDone = false;
    void small.then(() => (smallDone = true));
    await model.release();
    // B leads the second batch, alone: A's 10-token inputs would pad its 3 tokens to 10.
    expect(model.batchTags(1)).toEqual([2000]);
    await model.release();
    expect(smallDone).toBe(true);
    expect(vectorsOf(await small)).toEqual([2000]);
    while (model.pending() > 0) await model.release();
    expect(vectorsOf(await big)).toEqual(rows(1000, 40, 10).map((r) => r[0]));
  });

  it("fills the room a small leader leaves with other tenants' inputs of similar length", async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const a = batcher.submit('A', rows(1000, 40, 10));
    const b = batcher.submit('B', [row(2000, 6)]);
    await model.release();
    expect(model.batchTags(1)).toEqual([2000, 1004, 1005, 1006]); // 10 ≤ 2 × 6 and 4 × 10 ≤ 40
    while (model.pending() > 0) await model.release();
    expect((await a).ok && (await b).ok).toBe(true);
  });

  it('shares the model in tokens, not in inputs: long inputs one a batch, short ones four a batch', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const warmUp = batcher.submit('C', [row(3000)]);
    const long = batcher.submit('A', rows(1000, 10, 40)); // 40 tokens: one fills a batch
    const short = batcher.submit('B', rows(2000, 40, 10)); // 10 tokens: four fill a batch
    for (let i = 0; i < 11; i++) await model.release();
    const served = { A: 0, B: 0 };
    for (let i = 1; i <= 10; i++) {
      const got = tokensByTenant(model, i);
      expect(Object.keys(got)).toHaveLength(1); // neither fits beside the other
      served.A += got.A ?? 0;
      served.B += got.B ?? 0;
      expect(Math.abs(served.A - served.B)).toBeLessThanOrEqual(40); // never more than one batch apart
    }
    expect(served).toEqual({ A: 200, B: 200 });
    expect((await warmUp).ok).toBe(true);
    while (model.pending() > 0) await model.release();
    expect((await long).ok && (await short).ok).toBe(true);
  });

  it('gives a tenant that was idle no credit: after its first batch the tenants alternate', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const a = batcher.submit('A', rows(1000, 40, 10));
    for (let i = 0; i < 5; i++) await model.release(); // A alone: five batches
    const b = batcher.submit('B', rows(2000, 20, 10));
    for (let i = 0; i < 5; i++) await model.release();
    const leads = [5, 6, 7, 8, 9].map((i) => tenantOf(model.calls[i]![0]![0]!));
    expect(leads).toEqual(['A', 'B', 'A', 'B', 'A']); // batch 5 was cut before B arrived
    while (model.pending() > 0) await model.release();
    expect((await a).ok && (await b).ok).toBe(true);
  });

  it('does not let a tenant jump ahead by emptying its queue and refilling it at once', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const a = batcher.submit('A', rows(1000, 40, 10));
    let round = 0;
    const refill = (): void => void batcher.submit('B', rows(2000 + 4 * round++, 4, 10)).then(refill);
    refill();
    for (let i = 0; i < 9; i++) await model.release();
    const leads = model.calls.slice(1, 9).map((call) => tenantOf(call[0]![0]!));
    expect(leads.filter((t) => t === 'A')).toHaveLength(4);
    expect(leads.filter((t) => t === 'B')).toHaveLength(4);
    while (model.pending() > 0 && round < 40) await model.release();
    expect((await a).ok).toBe(true);
  });

  it('keeps each tenant FIFO: its oldest input is in the first batch it leads', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS);
    const warmUp = batcher.submit('C', [row(3000)]);
    const a = batcher.submit('A', [row(1000, 40), ...rows(1001, 8, 5)]); // the long one is oldest
    await model.release();
    expect(model.batchTags(1)).toEqual([1000]);
    while (model.pending() > 0) await model.release();
    expect(vectorsOf(await a)).toEqual([1000, ...rows(1001, 8, 5).map((r) => r[0])]);
    expect((await warmUp).ok).toBe(true);
  });
});

describe('queue shares per tenant', () => {
  const SHARES: BatchLimits = { ...LIMITS, maxTenantInputs: 4, maxTenantTokens: 1_000, maxQueueInputs: 7 };

  it('refuses a tenant past its share with overloaded while another tenant is still admitted', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, SHARES);
    const running = batcher.submit('A', [row(1000)]);
    const queued = batcher.submit('A', rows(1001, 4, 3));
    expect(await atOnce(batcher.submit('A', [row(1005)]))).toMatchObject({
      ok: false,
      reason: 'overloaded',
      retryAfterMs: expect.any(Number),
    });
    const other = batcher.submit('B', rows(2000, 3, 3));
    expect(batcher.queuedInputs).toBe(7);
    // The whole queue is full now: even a tenant with nothing queued waits its turn.
    expect(await atOnce(batcher.submit('C', [row(3000)]))).toMatchObject({
      ok: false,
      reason: 'overloaded',
      retryAfterMs: expect.any(Number),
    });
    while (model.pending() > 0) await model.release();
    expect(vectorsOf(await running)).toEqual([1000]);
    expect(vectorsOf(await queued)).toEqual([1001, 1002, 1003, 1004]);
    expect(vectorsOf(await other)).toEqual([2000, 2001, 2002]);
    const again = batcher.submit('A', rows(1010, 4, 3)); // the share is free again
    while (model.pending() > 0) await model.release();
    expect((await again).ok).toBe(true);
  });

  it('admits a request larger than the share when the tenant has nothing queued, and nothing more beside it', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, { ...SHARES, maxQueueInputs: 100 });
    const running = batcher.submit('C', [row(3000)]);
    const large = batcher.submit('A', rows(1000, 10, 3)); // over the share of 4, but A had nothing queued
    expect(await atOnce(batcher.submit('A', [row(1010)]))).toMatchObject({
      ok: false,
      reason: 'overloaded',
      retryAfterMs: expect.any(Number),
    });
    const other = batcher.submit('B', [row(2000)]);
    while (model.pending() > 0) await model.release();
    expect((await running).ok && (await large).ok && (await other).ok).toBe(true);
  });

  it('bounds tokens per tenant too', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, { ...LIMITS, maxTenantTokens: 20 });
    const running = batcher.submit('C', [row(3000)]);
    const queued = batcher.submit('A', [row(1000, 15)]);
    expect(await atOnce(batcher.submit('A', [row(1001, 6)]))).toMatchObject({
      ok: false,
      reason: 'overloaded',
      retryAfterMs: expect.any(Number),
    });
    const fits = batcher.submit('A', [row(1002, 5)]);
    const other = batcher.submit('B', [row(2000, 20)]);
    while (model.pending() > 0) await model.release();
    expect((await running).ok && (await queued).ok && (await fits).ok && (await other).ok).toBe(true);
  });

  it("cancelling one tenant's request frees its share and leaves the others' order alone", async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, SHARES);
    const running = batcher.submit('C', [row(3000)]);
    const gone = new AbortController();
    const abandoned = batcher.submit('A', rows(1000, 4, 3), gone.signal);
    const b = batcher.submit('B', rows(2000, 2, 3));
    gone.abort();
    expect(await abandoned).toEqual({ ok: false, reason: 'cancelled' });
    expect(batcher.queuedInputs).toBe(2);
    expect(batcher.queuedTokens).toBe(6);
    const a = batcher.submit('A', rows(1010, 4, 3)); // within the share again
    await model.release();
    expect(model.batchTags(1)).toEqual([2000, 2001, 1010, 1011]);
    while (model.pending() > 0) await model.release();
    expect((await running).ok && (await b).ok && (await a).ok).toBe(true);
  });
});

describe('timing per request', () => {
  it('queueMs runs from submit to its first batch; inferenceMs sums the model calls that held its inputs', async () => {
    let now = 0;
    const model = fakeModel();
    const batcher = new Batcher(model.embed, LIMITS, undefined, () => now);
    const first = batcher.submit('A', rows(1000, 6, 10)); // two batches: 4 now, 2 later
    now = 1;
    const second = batcher.submit('B', [row(2000, 10)]);
    now = 5;
    await model.release(); // batch 0 (A) took 5 ms; batch 1 (B + A's last two) starts at 5
    expect(model.batchTags(1)).toEqual([2000, 1004, 1005]);
    now = 12;
    await model.release(); // batch 1 took 7 ms
    expect(await second).toEqual({ ok: true, vectors: [Float32Array.of(2000)], queueMs: 4, inferenceMs: 7 });
    expect(await first).toMatchObject({ ok: true, queueMs: 0, inferenceMs: 12 });
  });
});
