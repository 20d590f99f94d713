/**
 * The timing response headers a client can read, named as text-embeddings-inference names them:
 * whole milliseconds spent tokenizing, queued and in the model (see `EmbedTiming`).
 */
import type { EmbedTiming } from '../core/engine.js';

/** `x-tokenization-time`, `x-queue-time`, `x-inference-time` in whole milliseconds. */
export function timingHeaders(timing: EmbedTiming): Record<string, string> {
  const ms = (value: number): string => String(Math.max(0, Math.round(value)));
  return {
    'x-tokenization-time': ms(timing.tokenizeMs),
    'x-queue-time': ms(timing.queueMs),
    'x-inference-time': ms(timing.inferenceMs),
  };
}
