/**
 * The online requests in flight in this process, from arrival to the response's close (the HTTP
 * layer marks them). The batch lane's work waits until none is: its next model call
 * (batcher.ts) and its next slice of event-loop work (cpu-gate.ts) start in the gaps between
 * online requests, not beside them. Each wait is bounded, so a lane under endless online
 * traffic still moves, one small step at a time. Pure bookkeeping; the timer is injected.
 */
export type SetTimer = (run: () => void, ms: number) => { unref?: () => unknown };
export type ClearTimer = (timer: ReturnType<SetTimer>) => void;

export class OnlineActivity {
  private count = 0;
  private readonly idleListeners = new Set<() => void>();

  constructor(
    private readonly setTimer: SetTimer = setTimeout,
    private readonly clearTimer: ClearTimer = clearTimeout as ClearTimer,
  ) {}

  /** Whether an online request is in flight. */
  get busy(): boolean {
    return this.count > 0;
  }

  /** Marks one online request in flight; call the returned function once when it ends. */
  begin(): () => void {
    this.count += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.count -= 1;
      if (this.count === 0) for (const listener of [...this.idleListeners]) listener();
    };
  }

  /** Calls `listener` each time the last online request in flight ends. */
  onIdle(listener: () => void): void {
    this.idleListeners.add(listener);
  }

  /** Resolves at once when no online request is in flight, else when none is or after `maxWaitMs`. */
  idle(maxWaitMs: number): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.clearTimer(timer);
        this.idleListeners.delete(done);
        resolve();
      };
      const timer = this.setTimer(done, maxWaitMs);
      this.idleListeners.add(done);
    });
  }
}
