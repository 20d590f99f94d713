/**
 * Dynamic batching, as text-embeddings-inference does it: inputs of concurrent requests wait in
 * one bounded queue; whenever the model is idle, the next batch is cut from the queue, bounded by
 * a padded-token budget and a maximum size, grouping inputs of similar length to cut padding.
 * No wait timer: whatever queued while the model was busy forms the next batch.
 *
 * The model is injected (`EmbedRows`), so the policy is unit-tested with a fake.
 */

/** Embeds token-id rows, one vector per row in row order. */
export type EmbedRows = (rows: readonly (readonly number[])[]) => Promise<Float32Array[]>;

export interface BatchLimits {
  /** Longest row × rows in one model call. */
  readonly maxBatchTokens: number;
  readonly maxBatchSize: number;
  /** Inputs and tokens allowed to wait; a request that would pass either is refused. */
  readonly maxQueueInputs: number;
  readonly maxQueueTokens: number;
}

/** What one model call was: inputs, padded tokens (longest × inputs) and its duration. */
export interface BatchStats {
  readonly size: number;
  readonly paddedTokens: number;
  readonly seconds: number;
}

/** Told of every model call (metrics); must not throw. */
export type BatchObserver = (stats: BatchStats) => void;

/** Being full is a value, not an error; model faults reject the promise. */
export type SubmitOutcome =
  | { readonly ok: true; readonly vectors: Float32Array[] }
  | { readonly ok: false; readonly reason: 'overloaded' | 'cancelled' };

interface Job {
  readonly vectors: (Float32Array | undefined)[];
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

/** How far past the oldest input the batcher looks for inputs of similar length. */
const WINDOW_PER_BATCH_SLOT = 8;

/**
 * Picks the next batch from the queue's lengths: always the oldest input (so nothing starves),
 * then, from a window of the oldest inputs, those closest in length to it, while the padded cost
 * (longest × count) stays within the budget. Returns queue positions in ascending order.
 */
export function selectBatch(lengths: readonly number[], limits: Pick<BatchLimits, 'maxBatchTokens' | 'maxBatchSize'>): number[] {
  if (lengths.length === 0) return [];
  const head = lengths[0]!;
  const window = Math.min(lengths.length, limits.maxBatchSize * WINDOW_PER_BATCH_SLOT);
  const candidates: number[] = [];
  for (let i = 1; i < window; i++) candidates.push(i);
  candidates.sort((a, b) => Math.abs(lengths[a]! - head) - Math.abs(lengths[b]! - head) || a - b);
  const chosen = [0];
  let longest = head;
  for (const i of candidates) {
    if (chosen.length >= limits.maxBatchSize) break;
    const wider = Math.max(longest, lengths[i]!);
    if (wider * (chosen.length + 1) > limits.maxBatchTokens) continue;
    chosen.push(i);
    longest = wider;
  }
  return chosen.sort((a, b) => a - b);
}

/** The bounded queue and the loop that feeds the model one batch at a time. */
export class Batcher {
  private queue: Entry[] = [];
  private tokensQueued = 0;
  private running = false;

  constructor(
    private readonly embed: EmbedRows,
    private readonly limits: BatchLimits,
    private readonly onBatch: BatchObserver = () => undefined,
  ) {}

  /** Inputs waiting (not yet handed to the model). */
  get queuedInputs(): number {
    return this.queue.length;
  }

  /** Tokens of the inputs waiting. */
  get queuedTokens(): number {
    return this.tokensQueued;
  }

  /**
   * Queues one request's rows; resolves with their vectors in row order. A request is admitted
   * when it fits the bounds, or when the queue is empty (so any valid request can be served).
   */
  submit(rows: readonly (readonly number[])[], signal?: AbortSignal): Promise<SubmitOutcome> {
    const tokens = rows.reduce((sum, row) => sum + row.length, 0);
    const fits =
      this.queue.length + rows.length <= this.limits.maxQueueInputs &&
      this.tokensQueued + tokens <= this.limits.maxQueueTokens;
    if (!fits && this.queue.length > 0) return Promise.resolve({ ok: false, reason: 'overloaded' });
    if (rows.length === 0) return Promise.resolve({ ok: true, vectors: [] });
    if (signal?.aborted) return Promise.resolve({ ok: false, reason: 'cancelled' });

    return new Promise<SubmitOutcome>((resolve, reject) => {
      const job: Job = {
        vectors: new Array<Float32Array | undefined>(rows.length),
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
      rows.forEach((row, index) => this.queue.push({ job, index, row }));
      this.tokensQueued += tokens;
      signal?.addEventListener('abort', () => this.drop(job, { ok: false, reason: 'cancelled' }), { once: true });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    const picked = new Set(selectBatch(this.queue.map((e) => e.row.length), this.limits));
    const batch = this.queue.filter((_, i) => picked.has(i));
    this.queue = this.queue.filter((_, i) => !picked.has(i));
    for (const entry of batch) this.tokensQueued -= entry.row.length;
    this.running = true;
    const started = performance.now();
    this.embed(batch.map((e) => e.row))
      .then((vectors) => this.deliver(batch, vectors))
      .catch((err: unknown) => this.failBatch(batch, err instanceof Error ? err : new Error(String(err))))
      .finally(() => {
        const longest = Math.max(...batch.map((e) => e.row.length));
        this.onBatch({ size: batch.length, paddedTokens: longest * batch.length, seconds: (performance.now() - started) / 1000 });
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
      if (job.remaining === 0) job.settle({ ok: true, vectors: job.vectors as Float32Array[] });
    });
  }

  /** A failed model call fails only the requests that had inputs in it. */
  private failBatch(batch: readonly Entry[], err: Error): void {
    for (const job of new Set(batch.map((e) => e.job))) {
      if (job.done) continue;
      this.removeQueued(job);
      job.fail(err);
    }
  }

  private drop(job: Job, outcome: SubmitOutcome): void {
    if (job.done) return;
    this.removeQueued(job);
    job.settle(outcome);
  }

  private removeQueued(job: Job): void {
    this.queue = this.queue.filter((entry) => {
      if (entry.job !== job) return true;
      this.tokensQueued -= entry.row.length;
      return false;
    });
  }
}
