/**
 * Several online model sessions (MODEL_SESSIONS): each idle session takes the next batch, so
 * calls run side by side; the batch lane still starts only with every online session idle; the
 * retry-after estimate counts the sessions' combined pace. Fake models and clock.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, type BatchLimits } from '../../embedder/src/core/batcher.js';
import type { EmbedRows } from '../../embedder/src/model/runner.js';
import { fakeClock, fakeModel, row, tags } from '../support/fake-model.js';

const LIMITS: BatchLimits = {
  maxBatchTokens: 400,
  maxBatchSize: 4,
  maxQueueInputs: 12,
  maxQueueTokens: 10_000,
  maxTenantInputs: 12,
  maxTenantTokens: 10_000,
};

/** The models' embed functions, with every call's row tags logged in the order the calls started. */
function logged(models: ReadonlyArray<ReturnType<typeof fakeModel>>): { embeds: EmbedRows[]; log: number[][] } {
  const log: number[][] = [];
  const embeds = models.map(
    (m): EmbedRows =>
      (rows) => {
        log.push(rows.map((r) => r[0]!));
        return m.embed(rows);
      },
  );
  return { embeds, log };
}

const vectorsOf = async (outcome: Promise<unknown>): Promise<number[]> => tags(((await outcome) as { vectors: Float32Array[] }).vectors);

describe('the batcher with two online sessions', () => {
  it('starts a second call on the idle session at once, and what queues behind both goes to the first one free', async () => {
    const [a, b] = [fakeModel(), fakeModel()];
    const batcher = new Batcher([a.embed, b.embed], LIMITS);
    const first = batcher.submit('org', [row(1)]);
    const second = batcher.submit('org', [row(2)]);
    // One session each: neither request waits for the other's call.
    expect(a.calls.length + b.calls.length).toBe(2);
    const third = batcher.submit('org', [row(3)]);
    const fourth = batcher.submit('org', [row(4)]);
    expect(a.calls.length + b.calls.length).toBe(2); // both busy: these wait
    const [firstOn, secondOn] = a.calls.length === 1 && a.batchTags(0)[0] === 1 ? [a, b] : [b, a];
    await secondOn.release();
    expect(await vectorsOf(second)).toEqual([2]);
    expect(secondOn.batchTags(1)).toEqual([3, 4]); // queued while both were busy: one batch
    await firstOn.release();
    expect(await vectorsOf(first)).toEqual([1]);
    await secondOn.release();
    expect(await vectorsOf(third)).toEqual([3]);
    expect(await vectorsOf(fourth)).toEqual([4]);
  });

  it('spreads one large request over both sessions and reassembles it in input order', async () => {
    const [a, b] = [fakeModel(), fakeModel()];
    const batcher = new Batcher([a.embed, b.embed], LIMITS);
    const outcome = batcher.submit(
      'org',
      Array.from({ length: 10 }, (_, i) => row(100 + i)),
    );
    expect(a.calls).toHaveLength(1);
    expect(b.calls).toHaveLength(1);
    while (a.pending() + b.pending() > 0) {
      if (b.pending() > 0) await b.release();
      if (a.pending() > 0) await a.release();
    }
    expect(await vectorsOf(outcome)).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
  });

  it("the lane's own model starts only when every online session is idle", async () => {
    const [a, b, lane] = [fakeModel(), fakeModel(), fakeModel()];
    const batcher = new Batcher([a.embed, b.embed], LIMITS, undefined, undefined, lane.embed);
    const online = [batcher.submit('org', [row(1)]), batcher.submit('org', [row(2)])];
    const bulk = batcher.submit('bulk', [row(100)], undefined, 'batch');
    expect(lane.calls).toHaveLength(0);
    await a.release();
    expect(lane.calls).toHaveLength(0); // one session still runs an online call
    await b.release();
    expect(lane.batchTags(0)).toEqual([100]);
    await lane.release();
    expect((await bulk).ok).toBe(true);
    for (const o of online) expect(((await o) as { ok: boolean }).ok).toBe(true);
  });

  it('sharing the online sessions, the lane takes every idle one without online work about, and one of them while it is', async () => {
    const [a, b] = [fakeModel(), fakeModel()];
    const time = fakeClock();
    const batcher = new Batcher([a.embed, b.embed], LIMITS, undefined, time.now);
    const bulk = batcher.submit(
      'bulk',
      Array.from({ length: 20 }, (_, i) => row(100 + i)),
      undefined,
      'batch',
    );
    expect([a.calls, b.calls].map((c) => c.length)).toEqual([1, 1]); // quiet: both sessions, full calls
    expect([a.calls[0], b.calls[0]].map((c) => c!.length)).toEqual([4, 4]);
    const online = batcher.submit('org', [row(1)]);
    await b.release();
    expect(b.batchTags(1)).toEqual([1]); // the online request before the lane's next lines
    await b.release();
    expect(await vectorsOf(online)).toEqual([1]);
    expect(b.pending()).toBe(0); // online work just seen, and a lane call still runs on a
    await a.release();
    expect(a.pending() + b.pending()).toBe(1); // one lane call, of one input
    expect([...a.calls, ...b.calls].at(-1)).toHaveLength(1);
    time.advance(5_000);
    while (a.pending() + b.pending() > 0) {
      if (a.pending() > 0) await a.release();
      if (b.pending() > 0) await b.release();
    }
    expect((await bulk).ok).toBe(true);
  });

  it("tells a refused request to come back after the queue drains at both sessions' pace, not one's", async () => {
    const retryAfter = async (sessions: number): Promise<number> => {
      const models = Array.from({ length: sessions }, () => fakeModel());
      const time = fakeClock();
      const batcher = new Batcher(
        models.map((m) => m.embed),
        LIMITS,
        undefined,
        time.now,
      );
      // Calls of 4 inputs × 100 tokens take 1 s each, on every session: the pace is measured.
      for (let round = 0; round < 20; round++) {
        const batch = Array.from({ length: sessions }, () =>
          batcher.submit(
            'org',
            Array.from({ length: 4 }, (_, i) => row(i, 100)),
          ),
        );
        time.advance(1_000);
        for (const m of models) await m.release();
        await Promise.all(batch);
      }
      // Fill the queue (12 inputs) behind busy sessions, then one more is refused.
      const held = Array.from({ length: sessions }, () =>
        batcher.submit(
          'org',
          Array.from({ length: 4 }, (_, i) => row(i, 100)),
        ),
      );
      const queued = Array.from({ length: 3 }, () =>
        batcher.submit(
          'org',
          Array.from({ length: 4 }, (_, i) => row(i, 100)),
        ),
      );
      const refused = (await batcher.submit('org', [row(9, 100)])) as { ok: false; retryAfterMs: number };
      expect(refused.ok).toBe(false);
      while (models.some((m) => m.pending() > 0)) for (const m of models) if (m.pending() > 0) await m.release();
      await Promise.all([...held, ...queued]);
      return refused.retryAfterMs;
    };
    const one = await retryAfter(1);
    const two = await retryAfter(2);
    // 1,200 queued tokens at 400 tokens/s (one session) or 800 (two), plus a margin.
    expect(one).toBeGreaterThan(3_000);
    expect(two).toBeGreaterThan(one * 0.4);
    expect(two).toBeLessThan(one * 0.6);
  });

  it('while one session runs, an idle one waits for a call at least as large, at most a quarter of a mean call', async () => {
    const [a, b] = [fakeModel(), fakeModel()];
    const time = fakeClock();
    const timers: Array<{ run: () => void; ms: number }> = [];
    const setTimer = (run: () => void, ms: number) => {
      timers.push({ run, ms });
      return {};
    };
    const { embeds, log } = logged([a, b]);
    const batcher = new Batcher(embeds, LIMITS, undefined, time.now, undefined, undefined, { setTimer });
    const calls = () => log;
    const release = async () => {
      for (const m of [a, b]) if (m.pending() > 0) await m.release();
    };
    // Calls of 100 ms: the gather window is a quarter of that, 25 ms, capped at 20.
    const warm = batcher.submit('org', [row(1), row(2), row(3), row(4)]);
    time.advance(100);
    await release();
    expect(await vectorsOf(warm)).toEqual([1, 2, 3, 4]);

    const running = batcher.submit('org', [row(5), row(6), row(7), row(8)]);
    const early = batcher.submit('org', [row(9)]);
    expect(calls()).toHaveLength(2); // one input behind a call of four: the idle session waits
    expect(timers.at(-1)!.ms).toBe(20);
    const rest = batcher.submit('org', [row(10), row(11), row(12)]);
    expect(calls().at(-1)).toEqual([9, 10, 11, 12]); // as large as the running call: it starts at once

    // Nothing more arrives: the session that frees first waits out the window, then runs the lone input.
    const late = batcher.submit('org', [row(13)]);
    const second = a.calls.at(-1)![0]![0] === 9 ? a : b;
    await second.release(); // [9..12] ends; [5..8] still runs
    expect(calls()).toHaveLength(3);
    time.advance(19);
    for (const t of timers.splice(0)) t.run();
    expect(calls()).toHaveLength(3); // 19 ms in: still waiting
    time.advance(1);
    for (const t of timers.splice(0)) t.run();
    expect(calls().at(-1)).toEqual([13]);
    while (a.pending() + b.pending() > 0) await release();
    for (const o of [running, early, rest, late]) expect(((await o) as { ok: boolean }).ok).toBe(true);
  });

  it('an online request beside a lane call on a shared session starts at once', async () => {
    const [a, b] = [fakeModel(), fakeModel()];
    const time = fakeClock();
    const { embeds, log } = logged([a, b]);
    const batcher = new Batcher(embeds, LIMITS, undefined, time.now);
    // An online call of 100 ms sets the gather window; then quiet, so the lane takes both sessions.
    const first = batcher.submit('org', [row(1), row(2), row(3), row(4)]);
    time.advance(100);
    for (const m of [a, b]) if (m.pending() > 0) await m.release();
    expect(await vectorsOf(first)).toEqual([1, 2, 3, 4]);
    time.advance(10_000);
    const bulk = batcher.submit(
      'bulk',
      [row(100), row(101), row(102), row(103), row(104), row(105), row(106), row(107)],
      undefined,
      'batch',
    );
    time.advance(100);
    await a.release(); // one lane call of four ends; the other runs on
    const online = batcher.submit('org', [row(9)]);
    expect(log.at(-1)).toEqual([9]); // a lane call is not an online one to wait for
    while (a.pending() + b.pending() > 0) for (const m of [a, b]) if (m.pending() > 0) await m.release();
    expect(await vectorsOf(online)).toEqual([9]);
    expect((await bulk).ok).toBe(true);
  });

  it('needs at least one session', () => {
    expect(() => new Batcher([], LIMITS)).toThrow(/at least one model session/);
  });
});
