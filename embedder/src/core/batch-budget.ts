/**
 * The default padded-token budget of one model call (BATCH_MAX_TOKENS unset), from the model
 * and the threads ONNX Runtime runs it on.
 *
 * A call should hold enough full-length rows that each thread has work in every operator, and
 * no more: one call's activations grow with its rows (32 rows × 512 tokens took the default
 * model's resident memory to 4 GB), and a small request behind a large one waits one call.
 * Measured on 2 cores (docs/benchmarks-history.md, "The batch budget on BERT-sized models"):
 * 4 rows of long notes per call run as fast as 8 or faster, in raw ONNX Runtime (BERT-base 2.39
 * against 2.25 notes/s, BERT-large 0.83 against 0.81) and through the embedder (one client, 8
 * notes per request: 2.1–2.4 against 2.0–2.1 notes/s on BERT-base, the same on BERT-large), with
 * both cores busy either way. So 2 rows per thread: 4 on 2 threads (2,048 tokens for a 512-token
 * model, the fixed default before), more only where more threads share a call.
 *
 * Each session (MODEL_SESSIONS) holds its own activations, so with sessions of one thread, the
 * default, a call holds 2 rows: on the default model, two such sessions embedded 11.5 notes/s at
 * 1,024 tokens a call against 11.7 at 2,048, and peaked at 998 MB resident against 1,472
 * (docs/benchmarks-history.md, 2026-11-27 (late)).
 */

/** Full-length rows per thread in one call, and the bounds on rows whatever the thread count. */
export const BATCH_ROWS = Object.freeze({ perThread: 2, min: 2, max: 16 });

/** `maxTokens` × rows, rows = 2 per thread within 2 to 16: 1,024 for a 512-token model on 1 thread, 2,048 on 2, 4,096 on 4. */
export function defaultBatchMaxTokens(maxTokens: number, threads: number): number {
  const rows = Math.min(BATCH_ROWS.max, Math.max(BATCH_ROWS.min, BATCH_ROWS.perThread * Math.max(1, Math.floor(threads))));
  return maxTokens * rows;
}
