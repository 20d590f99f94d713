/**
 * Dynamic batching, as text-embeddings-inference does it, made fair between tenants: inputs of
 * concurrent requests wait in bounded per-tenant queues (tenant-queues.ts); whenever the model is
 * idle, the next batch is cut, led by the tenant served fewest tokens, within a padded-token
 * budget and a maximum size. No wait timer: whatever queued while the model was busy forms the
 * next batch.
 *
 * The model and the clock are injected (`EmbedRows`, `now`), so the policy is unit-tested with fakes.
 */
import type { EmbedRows } from '../model/runner.js';
import { TenantQueues, type QueueBounds } from './tenant-queues.js';

/** The batch budget and the queue bounds (see QueueBounds). */
export type BatchLimits = QueueBounds;

/** What one model call was: inputs, padded tokens (longest × inputs) and its duration. */
export interface BatchStats {
  readonly size: number;
  readonly paddedTokens: number;
  readonly seconds: number;
}

/** Told of every model call (metrics); must not throw. */
export type BatchObserver = (stats: BatchStats) => void;

/**
 * Being full is a value, not an error; model faults reject the promise. `queueMs`: from submit
 * until the first batch holding one of the request's inputs started. `inferenceMs`: the summed
 * duration of the model calls that held its inputs (each call counted whole, as it is shared).
 */
export type SubmitOutcome =
  | { readonly ok: true; readonly vectors: Float32Array[]; readonly queueMs: number; readonly inferenceMs: number }
  | { readonly ok: false; readonly reason: 'overloaded' | 'cancelled' };

interface Job {
  readonly tenant: string;
  readonly vectors: (Float32Array | undefined)[];
  readonly submittedAt: number;
  queueMs: number | undefined;
  inferenceMs: number;
  remaining: number;
  done: boolean;
  readonly settle: (outcome: SubmitOutcome) => void;
  readonly fail: (err: Error) => void;
}

interface Entry {
  readonly job: Job;
  readonly index: number;
  readonly row: readonly number[];
}

/** The bounded per-tenant queues and the loop that feeds the model one batch at a time. */
export class Batcher {
  private readonly queues: TenantQueues<Entry>;
  private running = false;

  constructor(
    private readonly embed: EmbedRows,
    limits: BatchLimits,
    private readonly onBatch: BatchObserver = () => undefined,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.queues = new TenantQueues(limits);
  }

  /** Inputs waiting (not yet handed to the model). */
  get queuedInputs(): number {
    return this.queues.inputs;
  }

  /** Tokens of the inputs waiting. */
  get queuedTokens(): number {
    return this.queues.tokens;
  }

  /**
   * Queues one request's rows for `tenant`; resolves with their vectors in row order. Refused
   * (`overloaded`) when the tenant would pass its share or the queue its bounds; see `admits`.
   */
  submit(tenant: string, rows: readonly (readonly number[])[], signal?: AbortSignal): Promise<SubmitOutcome> {
    const tokens = rows.reduce((sum, row) => sum + row.length, 0);
    if (!this.queues.admits(tenant, rows.length, tokens)) return Promise.resolve({ ok: false, reason: 'overloaded' });
    if (rows.length === 0) return Promise.resolve({ ok: true, vectors: [], queueMs: 0, inferenceMs: 0 });
    if (signal?.aborted) return Promise.resolve({ ok: false, reason: 'cancelled' });

    return new Promise<SubmitOutcome>((resolve, reject) => {
      const job: Job = {
        tenant,
        vectors: new Array<Float32Array | undefined>(rows.length),
        submittedAt: this.now(),
        queueMs: undefined,
        inferenceMs: 0,
        remaining: rows.length,
        done: false,
        settle: (outcome) => {
          job.done = true;
          resolve(outcome);
        },
        fail: (err) => {
          job.done = true;
          reject(err);
        },
      };
      this.queues.push(
        tenant,
        rows.map((row, index) => ({ job, index, row })),
      );
      signal?.addEventListener('abort', () => this.drop(job, { ok: false, reason: 'cancelled' }), { once: true });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running) return;
    const batch = this.queues.nextBatch();
    if (batch.length === 0) return;
    this.running = true;
    const started = this.now();
    const jobs = new Set(batch.map((e) => e.job));
    for (const job of jobs) job.queueMs ??= started - job.submittedAt;
    const finished = (): number => {
      const seconds = (this.now() - started) / 1000;
      for (const job of jobs) job.inferenceMs += seconds * 1000;
      return seconds;
    };
    let seconds: number | undefined;
    this.embed(batch.map((e) => e.row))
      .then((vectors) => {
        seconds = finished();
        this.deliver(batch, vectors);
      })
      .catch((err: unknown) => {
        seconds ??= finished();
        this.failBatch(jobs, err instanceof Error ? err : new Error(String(err)));
      })
      .finally(() => {
        const longest = Math.max(...batch.map((e) => e.row.length));
        this.onBatch({ size: batch.length, paddedTokens: longest * batch.length, seconds: seconds ?? 0 });
        this.running = false;
        this.pump();
      });
  }

  private deliver(batch: readonly Entry[], vectors: readonly Float32Array[]): void {
    if (vectors.length !== batch.length) throw new Error(`model returned ${vectors.length} vectors for ${batch.length} inputs`);
    batch.forEach((entry, i) => {
      const { job } = entry;
      if (job.done) return;
      job.vectors[entry.index] = vectors[i];
      job.remaining -= 1;
      if (job.remaining === 0) {
        job.settle({ ok: true, vectors: job.vectors as Float32Array[], queueMs: job.queueMs ?? 0, inferenceMs: job.inferenceMs });
      }
    });
  }

  /** A failed model call fails only the requests that had inputs in it. */
  private failBatch(jobs: ReadonlySet<Job>, err: Error): void {
    for (const job of jobs) {
      if (job.done) continue;
      this.queues.remove(job.tenant, (entry) => entry.job === job);
      job.fail(err);
    }
  }

  private drop(job: Job, outcome: SubmitOutcome): void {
    if (job.done) return;
    this.queues.remove(job.tenant, (entry) => entry.job === job);
    job.settle(outcome);
  }
}
