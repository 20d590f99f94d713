/**
 * The batch lane's gate: gated work runs one at a time, in arrival order, a failure frees the
 * gate, each piece starts on a new turn of the event loop (I/O in between), and with the online
 * activity each piece and each of its slices starts between online requests (bounded).
 */
import { describe, expect, it } from 'vitest';
import { CpuGate } from '../../embedder/src/core/cpu-gate.js';
import { OnlineActivity } from '../../embedder/src/core/online-activity.js';

/** Online activity whose bounded waits run on fake timers: `timers` holds each wait's expiry, to call by hand. */
function activityWithFakeTimers() {
  const timers: Array<() => void> = [];
  const online = new OnlineActivity(
    (run) => {
      timers.push(run);
      return {};
    },
    () => undefined,
  );
  return { online, timers };
}

describe('CpuGate', () => {
  it('runs one piece of work at a time, in order, and goes on after a failure', async () => {
    const gate = new CpuGate();
    const log: string[] = [];
    const releases: Array<() => void> = [];
    const piece = (name: string, fail = false) =>
      gate.run(async () => {
        log.push(`start ${name}`);
        await new Promise<void>((resolve) => releases.push(resolve));
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      });
    const a = piece('a', true);
    const b = piece('b');
    const c = piece('c');
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['start a']);
    releases.shift()!();
    await expect(a).rejects.toThrow('a');
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['start a', 'end a', 'start b']);
    releases.shift()!();
    expect(await b).toBe('b');
    await new Promise((r) => setImmediate(r));
    releases.shift()!();
    expect(await c).toBe('c');
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('starts a piece only when no online request is in flight, or after its bounded wait', async () => {
    const { online, timers } = activityWithFakeTimers();
    const gate = new CpuGate(online, 500);
    const log: string[] = [];
    const end = online.begin();
    const a = gate.run(async () => void log.push('a'));
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual([]); // an online request is in flight
    end();
    await a;
    expect(log).toEqual(['a']);
    online.begin(); // and it never ends
    const b = gate.run(async () => void log.push('b'));
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['a']);
    timers.at(-1)!(); // the bounded wait runs out
    await b;
    expect(log).toEqual(['a', 'b']);
  });

  it('hands over on a new turn of the event loop, so I/O that arrived meanwhile runs between two pieces', async () => {
    const gate = new CpuGate();
    const log: string[] = [];
    const a = gate.run(async () => {
      log.push('a');
      // Stands for a socket that became readable while `a` ran: its callback is due on the next turn.
      setImmediate(() => log.push('io'));
    });
    const b = gate.run(async () => void log.push('b'));
    await Promise.all([a, b]);
    expect(log).toEqual(['a', 'io', 'b']);
  });

  it('gives work a slicing whose pause waits for a new turn and for the online requests in flight', async () => {
    const { online } = activityWithFakeTimers();
    const gate = new CpuGate(online, 500);
    const log: string[] = [];
    let end: () => void = () => undefined;
    const work = gate.run(async (slicing) => {
      expect(slicing.ms).toBeLessThanOrEqual(2);
      log.push('slice 1');
      end = online.begin(); // an online request arrives during the first slice
      await slicing.pause();
      log.push('slice 2');
    });
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['slice 1']);
    end();
    await work;
    expect(log).toEqual(['slice 1', 'slice 2']);
  });
});
