/**
 * Cutting one batch from one FIFO queue: the oldest input, then inputs of similar length from a
 * window of the oldest, within a padded-token budget (longest × count) and a maximum size.
 */

/** The two bounds of one model call. */
export interface BatchBudget {
  /** Longest row × rows in one model call. */
  readonly maxBatchTokens: number;
  readonly maxBatchSize: number;
}

/** How far past the oldest input the batcher looks for inputs of similar length. */
const WINDOW_PER_BATCH_SLOT = 8;

/**
 * Picks the next batch from the queue's lengths: always the oldest input (so nothing starves),
 * then, from a window of the oldest inputs, those closest in length to it, while the padded cost
 * (longest × count) stays within the budget. Returns queue positions in ascending order.
 */
export function selectBatch(lengths: readonly number[], limits: BatchBudget): number[] {
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
