/**
 * The online requests in flight (core/online-activity.ts), which the batch lane waits on: counted
 * from begin to end (each end once), idle listeners told when the last one ends, and a bounded
 * wait. Fake timer.
 */
import { describe, expect, it } from 'vitest';
import { OnlineActivity } from '../../embedder/src/core/online-activity.js';

function fakeTimers() {
  const pending = new Map<number, { run: () => void; ms: number }>();
  let next = 0;
  return {
    set: (run: () => void, ms: number) => {
      const id = next++;
      pending.set(id, { run, ms });
      return { id } as unknown as ReturnType<typeof setTimeout>;
    },
    clear: (timer: unknown) => void pending.delete((timer as { id: number }).id),
    /** Fires every timer set for `ms` or less. */
    fire: (ms: number) => {
      for (const [id, t] of [...pending]) {
        if (t.ms <= ms) {
          pending.delete(id);
          t.run();
        }
      }
    },
    get count() {
      return pending.size;
    },
  };
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('OnlineActivity', () => {
  it('is busy from the first begin to the last end, and counts an end once', () => {
    const activity = new OnlineActivity();
    const idle: number[] = [];
    activity.onIdle(() => idle.push(1));
    expect(activity.busy).toBe(false);
    const endA = activity.begin();
    const endB = activity.begin();
    endA();
    endA(); // a second 'close' of the same request changes nothing
    expect(activity.busy).toBe(true);
    expect(idle).toHaveLength(0);
    endB();
    expect(activity.busy).toBe(false);
    expect(idle).toHaveLength(1);
  });

  it('resolves idle() at once when nothing is in flight, else when the last request ends', async () => {
    const timers = fakeTimers();
    const activity = new OnlineActivity(timers.set, timers.clear);
    expect(await settled(activity.idle(500))).toBe(true);
    const end = activity.begin();
    const waiting = activity.idle(500);
    expect(await settled(waiting)).toBe(false);
    end();
    expect(await settled(waiting)).toBe(true);
    expect(timers.count).toBe(0); // its timer is cleared
  });

  it('bounds the wait: idle() resolves after maxWaitMs while requests stay in flight', async () => {
    const timers = fakeTimers();
    const activity = new OnlineActivity(timers.set, timers.clear);
    activity.begin();
    const waiting = activity.idle(500);
    timers.fire(499);
    expect(await settled(waiting)).toBe(false);
    timers.fire(500);
    expect(await settled(waiting)).toBe(true);
    expect(activity.busy).toBe(true);
  });
});
