/**
 * One at a time: the batch lane's event-loop work (tokenizing a line, rendering its response)
 * passes through a gate, so at most one slice of it waits in the event loop before an online
 * request's next step. Without it, four workers running a segment of 64 lines each queued
 * hundreds of 10 ms slices ahead of every online request. Pure promise bookkeeping, no clock.
 */
export class CpuGate {
  private busy = false;
  private readonly waiting: Array<() => void> = [];

  /** Runs `work` when no other gated work runs; the next waiter starts when it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    }
  }
}
