/**
 * Response headers that say what produced the vectors: the model's fingerprint and, when
 * `truncate_prompt_tokens` cut inputs, which ones and from how many tokens (truncation is never
 * silent). Both documented in openapi/openapi.yaml (ModelFingerprint, TruncatedInputs).
 */
import type { TruncatedInput } from '../core/engine.js';

/** At most this many `index:tokens` pairs; the rest is counted (`+N`), so the header stays small. */
export const MAX_TRUNCATED_LISTED = 64;

/** `x-truncated-inputs: 0:734,5:611[,+N]`, or nothing when no input was cut. */
export function truncationHeaders(truncated: readonly TruncatedInput[] | undefined): Record<string, string> {
  if (!truncated || truncated.length === 0) return {};
  const listed = truncated.slice(0, MAX_TRUNCATED_LISTED).map((t) => `${t.index}:${t.tokens}`);
  const more = truncated.length - listed.length;
  return { 'x-truncated-inputs': more > 0 ? `${listed.join(',')},+${more}` : listed.join(',') };
}

/** `x-model-fingerprint`, when the embedder knows it (tests that build an app may omit it). */
export function fingerprintHeaders(fingerprint: string | undefined): Record<string, string> {
  return fingerprint ? { 'x-model-fingerprint': fingerprint } : {};
}
