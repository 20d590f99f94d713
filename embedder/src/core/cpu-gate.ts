/**
 * One at a time, and between online requests: the batch lane's event-loop work (tokenizing a
 * line, rendering its response) passes through a gate, so at most one slice of it waits in the
 * event loop before an online request's next step. Without it, four workers running a segment
 * of 64 lines each queued hundreds of 10 ms slices ahead of every online request. Given the
 * process's online activity, each slice also waits until no online request is in flight (at
 * most `maxWaitMs`), so the lane's work falls in the gaps between online requests.
 *
 * Each slice starts on a fresh turn of the event loop (setImmediate), never in the microtask of
 * the slice before: handing the gate over by promise alone chained a whole segment's lines
 * (tokenizing, rendering) into one unbroken run of 10–15 ms, and online requests that arrived
 * meanwhile waited in their sockets for all of it (issue 27's p99 during a batch). No clock of
 * its own.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { OnlineActivity } from './online-activity.js';

/** How long one slice of lane work waits for online requests to end before it runs anyway. */
const GATE_MAX_WAIT_MS = 500;

/**
 * How gated work cuts itself up: after about `ms` of work it awaits `pause` (a new turn of the
 * event loop, then no online request in flight), so an online request that arrives meanwhile
 * waits about `ms` at most. Ungated work (online requests) uses longer slices and a plain yield.
 */
export interface Slicing {
  readonly ms: number;
  readonly pause: () => Promise<void>;
}

/** A slice of gated work: an online request waits behind at most about this long. */
const GATE_SLICE_MS = 2;

/**
 * Ungated work's slicing (an online request's own tokenizing and rendering): about 10 ms, then a
 * plain yield. Tokenizing 1,000 long inputs takes about a second; yielding this often keeps
 * /health prompt.
 */
export const ONLINE_SLICING: Slicing = { ms: 10, pause: () => nextTurn() };

export class CpuGate {
  private busy = false;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly online?: OnlineActivity,
    private readonly maxWaitMs = GATE_MAX_WAIT_MS,
  ) {}

  /**
   * Runs `work` on a later turn of the event loop, when no other gated work runs and no online
   * request is in flight; the next waiter starts when it settles. `work` cuts itself into
   * slices as `slicing` says, pausing between them the same way.
   */
  async run<T>(work: (slicing: Slicing) => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      await this.pause();
      return await work(this.slicing);
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }

  /** A new turn of the event loop, then no online request in flight (at most `maxWaitMs`). */
  private readonly pause = async (): Promise<void> => {
    await nextTurn();
    await this.online?.idle(this.maxWaitMs);
  };

  private readonly slicing: Slicing = { ms: GATE_SLICE_MS, pause: this.pause };
}
