/**
 * Supervises one component: starts it, knows when it is ready (its probe), drains and stops it
 * (SIGTERM, then SIGKILL after its grace), restarts it when it dies unasked — with exponential
 * backoff — and gives up with a clear message when it keeps crashing.
 */
import { describeExit, spawnChild, type Child, type ExitInfo } from './child.js';
import type { ComponentSpec } from './components.js';
import { waitFor } from './probes.js';

/** How a crashed component is restarted. */
export interface RestartPolicy {
  /** Delay before the first restart; doubled for each further crash within `windowMs`. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** More crashes than this within `windowMs` and the supervisor gives up. */
  readonly crashLimit: number;
  readonly windowMs: number;
}

export const DEFAULT_RESTART: RestartPolicy = Object.freeze({ initialDelayMs: 250, maxDelayMs: 8_000, crashLimit: 5, windowMs: 60_000 });

export type SupervisorEvent =
  | { readonly kind: 'started'; readonly name: string; readonly pid: number }
  | { readonly kind: 'ready'; readonly name: string; readonly pid: number }
  | { readonly kind: 'crashed'; readonly name: string; readonly exit: string; readonly restartInMs: number }
  | { readonly kind: 'gave-up'; readonly name: string; readonly message: string };

export type SupervisorState = 'idle' | 'starting' | 'ready' | 'backoff' | 'stopping' | 'stopped' | 'failed';

/** A component under supervision. */
export class Supervisor {
  private child: Child | undefined;
  private crashes: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private wanted = false;
  private current: SupervisorState = 'idle';
  private readyWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private failure: Error | undefined;

  constructor(
    readonly spec: ComponentSpec,
    private readonly policy: RestartPolicy = DEFAULT_RESTART,
    private readonly onEvent: (event: SupervisorEvent) => void = () => {},
  ) {}

  get name(): string {
    return this.spec.name;
  }
  get state(): SupervisorState {
    return this.current;
  }
  /** The running child's pid, if any. */
  get pid(): number | undefined {
    return this.child && !this.child.exited() ? this.child.pid : undefined;
  }
  get logFile(): string {
    return this.spec.logFile;
  }
  /** True when no child runs (watched by waitFor so a dead component is reported as such). */
  exited(): boolean {
    return this.current === 'failed' || this.current === 'stopped';
  }

  /** Starts the component; resolves once its probe says ready, rejects if it gives up or times out. */
  async start(): Promise<void> {
    this.wanted = true;
    this.failure = undefined;
    if (this.current === 'ready') return;
    if (this.current !== 'starting' && this.current !== 'backoff') this.launch();
    return this.whenReady();
  }

  /** Resolves when ready (rejects when the supervisor gives up or the component is stopped). */
  whenReady(): Promise<void> {
    if (this.current === 'ready') return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  /** Sends a signal to the running child without changing what the supervisor wants (a crash). */
  signal(signal: NodeJS.Signals): void {
    this.child?.process.kill(signal);
  }

  /** Drains and stops the component for good (no restart). */
  async stop(): Promise<void> {
    this.wanted = false;
    clearTimeout(this.timer);
    const child = this.child;
    if (child && !child.exited()) {
      this.current = 'stopping';
      const started = Date.now();
      // A failed drain (the admin port gone, say) still leads to the plain stop below.
      await this.spec.drain?.(this.spec.stopGraceMs).catch(() => undefined);
      await child.stop(Math.max(1_000, this.spec.stopGraceMs - (Date.now() - started)));
    }
    this.current = 'stopped';
    this.settle(new Error(`${this.name} was stopped`));
  }

  /** A rolling restart: drain and stop the running child, start a new one, resolve once ready. */
  async restart(): Promise<void> {
    await this.stop();
    this.crashes = [];
    await this.start();
  }

  private launch(): void {
    this.current = 'starting';
    const child = spawnChild(this.spec);
    this.child = child;
    this.onEvent({ kind: 'started', name: this.name, pid: child.pid });
    void child.gone.then((info) => this.exitedUnasked(child, info));
    waitFor(`${this.name} to be ready`, this.spec.ready, this.spec.readyTimeoutMs, [child]).then(
      () => {
        if (this.child !== child || child.exited() || this.current !== 'starting') return;
        this.current = 'ready';
        this.onEvent({ kind: 'ready', name: this.name, pid: child.pid });
        this.settle();
      },
      // Not ready in time: stop it; its exit then counts as a crash and is restarted or given up.
      () => {
        if (this.child === child && this.wanted) void child.stop(this.spec.stopGraceMs);
      },
    );
  }

  private exitedUnasked(child: Child, info: ExitInfo): void {
    if (!this.wanted || this.child !== child) return;
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < this.policy.windowMs), now];
    const exit = describeExit(info);
    if (this.crashes.length > this.policy.crashLimit) {
      const message =
        `${this.name} keeps crashing: ${this.crashes.length} exits within ${this.policy.windowMs / 1000} s ` +
        `(last: ${exit}); not restarting it again. See ${this.spec.logFile}`;
      this.current = 'failed';
      this.wanted = false;
      this.onEvent({ kind: 'gave-up', name: this.name, message });
      this.settle(new Error(message));
      return;
    }
    const delay = Math.min(this.policy.initialDelayMs * 2 ** (this.crashes.length - 1), this.policy.maxDelayMs);
    this.current = 'backoff';
    this.onEvent({ kind: 'crashed', name: this.name, exit, restartInMs: delay });
    this.timer = setTimeout(() => {
      if (this.wanted) this.launch();
    }, delay);
  }

  private settle(error?: Error): void {
    if (error) this.failure = error;
    const waiters = this.readyWaiters;
    this.readyWaiters = [];
    for (const w of waiters) error ? w.reject(error) : w.resolve();
  }
}

/** The line a supervisor event is logged as. */
export function describeEvent(event: SupervisorEvent): string {
  switch (event.kind) {
    case 'started':
      return `started ${event.name} (pid ${event.pid})`;
    case 'ready':
      return `${event.name} is ready (pid ${event.pid})`;
    case 'crashed':
      return `${event.name} exited unexpectedly (${event.exit}); restarting in ${event.restartInMs} ms`;
    case 'gave-up':
      return event.message;
  }
}
