/**
 * A fake model for the batcher's unit tests: it records each batch and answers only when the
 * test releases it, so a test controls what queues while the "model" is busy. Each row's first
 * token id tags it, and its vector is [tag], so results trace back to their inputs.
 */

/** A row of `length` tokens whose first id is `tag`. */
export const row = (tag: number, length = 3): number[] => [tag, ...Array.from({ length: length - 1 }, () => 0)];

/** The tags of a request's vectors, in order. */
export const tags = (vectors: Float32Array[]): number[] => vectors.map((v) => v[0]!);

/** The fake model: `embed` for the batcher, `calls` (rows per batch), `release` answers the oldest call. */
export function fakeModel() {
  const calls: number[][][] = [];
  const releases: Array<(fail?: Error) => void> = [];
  const embed = (rows: readonly (readonly number[])[]) => {
    calls.push(rows.map((r) => [...r]));
    return new Promise<Float32Array[]>((resolve, reject) => {
      releases.push((fail) => (fail ? reject(fail) : resolve(rows.map((r) => Float32Array.of(r[0]!)))));
    });
  };
  /** Answers the oldest pending call (or fails it), then lets the batcher cut the next one. */
  const release = async (fail?: Error) => {
    releases.shift()!(fail);
    await new Promise((r) => setImmediate(r));
  };
  /** Tags of the rows in call `i`. */
  const batchTags = (i: number): number[] => calls[i]!.map((r) => r[0]!);
  return { embed, calls, release, batchTags, pending: () => releases.length };
}

/** The outcome if `promise` settles within one turn of the event loop, else 'pending' (a refusal is immediate). */
export function atOnce<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

/** A clock the test moves by hand (`now` for the batcher, `advance` to pass time). */
export function fakeClock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}
