/**
 * The default padded-token budget of one model call (BATCH_MAX_TOKENS unset), from the model
 * and the threads ONNX Runtime runs it on.
 *
 * A fixed 2,048 fit 32 short sentences of the default model per call, but only 4 notes of 512
 * tokens: on a BERT-base-sized model a request of 8 notes became two small calls in a row,
 * each too small to keep both cores' threads busy through the whole graph, and a core idled.
 * What a call should hold scales with the threads that share it, in full-length rows: enough
 * rows per thread that every thread has work in each operator, few enough that one call's
 * activations stay small (32 rows × 512 tokens took the default model's resident memory to
 * 4 GB) and a small request behind a large one waits one short call, not a long one.
 */

/** Full-length rows per thread in one call, and the bounds on rows whatever the thread count. */
export const BATCH_ROWS = Object.freeze({ perThread: 4, min: 4, max: 16 });

/** `maxTokens` × rows, rows = 4 per thread within 4 to 16: 4,096 for a 512-token model on 2 threads. */
export function defaultBatchMaxTokens(maxTokens: number, threads: number): number {
  const rows = Math.min(BATCH_ROWS.max, Math.max(BATCH_ROWS.min, BATCH_ROWS.perThread * Math.max(1, Math.floor(threads))));
  return maxTokens * rows;
}
