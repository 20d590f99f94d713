/**
 * One at a time, and between online requests: the batch lane's event-loop work (tokenizing a
 * line, rendering its response) passes through a gate, so at most one slice of it waits in the
 * event loop before an online request's next step. Without it, four workers running a segment
 * of 64 lines each queued hundreds of 10 ms slices ahead of every online request. Given the
 * process's online activity, each slice also waits until no online request is in flight (at
 * most `maxWaitMs`), so the lane's work falls in the gaps between online requests. Pure promise
 * bookkeeping, no clock of its own.
 */
import type { OnlineActivity } from './online-activity.js';

/** How long one slice of lane work waits for online requests to end before it runs anyway. */
const GATE_MAX_WAIT_MS = 500;

export class CpuGate {
  private busy = false;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly online?: OnlineActivity,
    private readonly maxWaitMs = GATE_MAX_WAIT_MS,
  ) {}

  /** Runs `work` when no other gated work runs (and no online request is in flight); the next waiter starts when it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      await this.online?.idle(this.maxWaitMs);
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }
}
