/**
 * The batcher's two lanes (issue 27): the Batch API's lines run only when no online input waits,
 * fair between organizations, and one input a call while online requests are about, so an
 * online request waits for at most one input's lane call (sharing the online model) or meets at
 * most one beside its own (with a model of its own). Fake model and clock.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, type BatchLimits } from '../../embedder/src/core/batcher.js';
import { OnlineActivity } from '../../embedder/src/core/online-activity.js';
import { fakeClock, fakeModel, row, tags } from '../support/fake-model.js';

const LIMITS: BatchLimits = {
  maxBatchTokens: 400,
  maxBatchSize: 8,
  maxQueueInputs: 100,
  maxQueueTokens: 10_000,
  maxTenantInputs: 100,
  maxTenantTokens: 10_000,
};

/** A timer that only records what it was asked to run, and when: the test runs it by hand. */
function fakeTimers() {
  const timers: Array<{ run: () => void; ms: number }> = [];
  const setTimer = (run: () => void, ms: number) => {
    timers.push({ run, ms });
    return {};
  };
  return { timers, setTimer };
}

describe('the batch lane', () => {
  it('yields to online work: queued online inputs always go before queued batch lines', async () => {
    const model = fakeModel();
    const time = fakeClock();
    const batcher = new Batcher(model.embed, LIMITS, undefined, time.now);
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 24 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect(model.batchTags(0)).toEqual([100, 101, 102, 103, 104, 105, 106, 107]); // idle model: a full call
    const online = batcher.submit('org', [row(1), row(2)]);
    await model.release();
    expect(model.batchTags(1)).toEqual([1, 2]); // the online request went first
    await model.release();
    expect(tags(((await online) as { vectors: Float32Array[] }).vectors)).toEqual([1, 2]);
    // Online work was just seen: the lane runs one input a call.
    expect(model.calls[2]).toHaveLength(1);
    time.advance(5_000);
    await model.release();
    expect(model.calls[3]).toHaveLength(8); // quiet again: full calls
    while (model.pending() > 0) await model.release();
    expect((await bulk).ok).toBe(true);
  });

  it('sharing the online model, each lane call waits anew for online requests in flight (500 ms at most)', async () => {
    const model = fakeModel();
    const time = fakeClock();
    const activity = new OnlineActivity();
    const batcher = new Batcher(model.embed, LIMITS, undefined, time.now, undefined, activity);
    const end = activity.begin(); // online requests stay in flight until the end
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 3 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect(model.calls).toHaveLength(0); // held
    time.advance(600);
    const request = batcher.submit('org', [row(1)]); // past the bound: the online call first
    expect(model.batchTags(0)).toEqual([1]);
    await model.release();
    expect((await request).ok).toBe(true);
    expect(model.batchTags(1)).toEqual([100]); // then one lane input
    await model.release();
    expect(model.calls).toHaveLength(2); // the next lane call is held again
    time.advance(600);
    const again = batcher.submit('org', [row(2)]);
    await model.release();
    expect((await again).ok).toBe(true);
    expect(model.batchTags(3)).toEqual([101]);
    await model.release();
    end(); // none in flight: the last input goes at once
    expect(model.batchTags(4)).toEqual([102]);
    await model.release();
    expect((await bulk).ok).toBe(true);
  });

  it('is never refused for its size and does not count against the online queue bounds', async () => {
    const model = fakeModel();
    // A clock that stands still: calls take no time, so the lane never rests between them.
    const batcher = new Batcher(model.embed, { ...LIMITS, maxQueueInputs: 2, maxTenantInputs: 2 }, undefined, fakeClock().now);
    const first = batcher.submit('bulk', [row(1)], undefined, 'batch');
    const lines = batcher.submit(
      'bulk',
      Array.from({ length: 50 }, (_, i) => row(10 + i)),
      undefined,
      'batch',
    );
    expect(batcher.queuedInputs).toBe(0);
    expect(batcher.backgroundInputs).toBe(50);
    const online = batcher.submit('org', [row(2)]);
    while (model.pending() > 0) await model.release();
    expect((await first).ok && (await lines).ok && (await online).ok).toBe(true);
  });

  it('shares the lane fairly between organizations', async () => {
    const model = fakeModel();
    const batcher = new Batcher(model.embed, { ...LIMITS, maxBatchSize: 2 });
    const busy = batcher.submit('a', [row(1)], undefined, 'batch');
    const a = batcher.submit(
      'a',
      Array.from({ length: 10 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    const b = batcher.submit(
      'b',
      Array.from({ length: 4 }, (_, i) => row(200 + i)),
      undefined,
      'batch',
    );
    for (let i = 0; i < 3; i++) await model.release();
    // b, which joined while a had a backlog, is served within the next calls, not after a's ten lines.
    const next = [1, 2, 3].flatMap((i) => model.batchTags(i));
    expect(next.filter((t) => t >= 200).length).toBeGreaterThanOrEqual(2);
    while (model.pending() > 0) await model.release();
    expect((await busy).ok && (await a).ok && (await b).ok).toBe(true);
  });
});

describe('the batch lane with a model of its own (a low-priority session)', () => {
  it('runs beside online calls, never delaying one, but starts a call only while the online model is idle, cut small while online work is about', async () => {
    const online = fakeModel();
    const background = fakeModel();
    const time = fakeClock();
    const batcher = new Batcher(online.embed, LIMITS, undefined, time.now, background.embed);
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 24 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect(background.batchTags(0)).toEqual([100, 101, 102, 103, 104, 105, 106, 107]); // no online work: a full call
    expect(online.calls).toHaveLength(0); // the lane never uses the online model
    // The batch call is still running; the online request is cut at once on its own model.
    const request = batcher.submit('org', [row(1), row(2)]);
    expect(online.batchTags(0)).toEqual([1, 2]);
    // The lane's call ends while the online call runs: its next call waits for the online model.
    await background.release();
    expect(background.calls).toHaveLength(1);
    await online.release();
    expect(tags(((await request) as { vectors: Float32Array[] }).vectors)).toEqual([1, 2]);
    // Online idle again, but seen lately: one input a call.
    expect(background.calls[1]).toHaveLength(1);
    time.advance(5_000);
    await background.release();
    expect(background.calls[2]).toHaveLength(8); // quiet again: full calls
    while (background.pending() > 0) await background.release();
    expect(online.calls).toHaveLength(1);
    expect(tags(((await bulk) as { vectors: Float32Array[] }).vectors)).toEqual(Array.from({ length: 24 }, (_, i) => 100 + i));
  });

  it('starts a call only between online requests in flight, and after 500 ms of them anyway', async () => {
    const online = fakeModel();
    const background = fakeModel();
    const time = fakeClock();
    const activity = new OnlineActivity();
    const batcher = new Batcher(online.embed, LIMITS, undefined, time.now, background.embed, activity);
    const endFirst = activity.begin(); // an online request in flight (not yet at the model)
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 12 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect(background.calls).toHaveLength(0); // held back while it is in flight
    endFirst();
    expect(background.batchTags(0)).toEqual([100, 101, 102, 103, 104, 105, 106, 107]); // its end starts the lane
    const endSecond = activity.begin(); // another one, which stays in flight
    await background.release();
    expect(background.calls).toHaveLength(1); // held again
    time.advance(600);
    const request = batcher.submit('org', [row(1)]); // past the bound, but the online model is busy now
    expect(background.calls).toHaveLength(1);
    await online.release();
    expect((await request).ok).toBe(true);
    expect(background.batchTags(1)).toEqual([108]); // held 600 ms: one input (online work seen lately)
    endSecond();
    while (background.pending() > 0) await background.release();
    expect((await bulk).ok).toBe(true);
    expect(online.calls).toHaveLength(1);
  });

  it("while online work is about, rests twice each call's duration after it (a timer resumes it); with none about, does not rest", async () => {
    const online = fakeModel();
    const background = fakeModel();
    const time = fakeClock();
    const { timers, setTimer } = fakeTimers();
    const batcher = new Batcher(online.embed, LIMITS, undefined, time.now, background.embed, undefined, { setTimer });
    const request = batcher.submit('org', [row(1)]);
    await online.release();
    expect((await request).ok).toBe(true); // online work seen at t = 0
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 3 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect(background.batchTags(0)).toEqual([100]);
    time.advance(10); // the call takes 10 ms
    await background.release();
    expect(background.calls).toHaveLength(1); // resting
    expect(timers.map((t) => t.ms)).toEqual([20]);
    time.advance(20);
    timers.shift()!.run();
    expect(background.batchTags(1)).toEqual([101]);
    time.advance(3_000); // online work no longer about: no rest after this call
    await background.release();
    expect(background.batchTags(2)).toEqual([102]);
    expect(timers).toHaveLength(0);
    await background.release();
    expect((await bulk).ok).toBe(true);
  });

  it('with a rest factor of 0 (BATCH_LANE_REST=0), does not rest beside online work', async () => {
    const online = fakeModel();
    const background = fakeModel();
    const time = fakeClock();
    const { timers, setTimer } = fakeTimers();
    const batcher = new Batcher(online.embed, LIMITS, undefined, time.now, background.embed, undefined, { restFactor: 0, setTimer });
    const request = batcher.submit('org', [row(1)]);
    await online.release();
    expect((await request).ok).toBe(true);
    const bulk = batcher.submit('bulk', [row(100), row(101)], undefined, 'batch');
    time.advance(10);
    await background.release();
    expect(background.batchTags(1)).toEqual([101]); // at once
    expect(timers).toHaveLength(0);
    await background.release();
    expect((await bulk).ok).toBe(true);
  });

  it('fails only the lines of a failed batch-lane call, and online work goes on', async () => {
    const online = fakeModel();
    const background = fakeModel();
    const batcher = new Batcher(online.embed, LIMITS, undefined, undefined, background.embed);
    const lines = batcher.submit('bulk', [row(100)], undefined, 'batch');
    const request = batcher.submit('org', [row(1)]);
    const linesFailed = expect(lines).rejects.toThrow('worker died');
    await background.release(new Error('worker died'));
    await linesFailed;
    await online.release();
    expect((await request).ok).toBe(true);
  });
});
