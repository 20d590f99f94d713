/**
 * The timing response headers a client can read, named as text-embeddings-inference names them:
 * whole milliseconds spent tokenizing, queued and in the model (see `EmbedTiming`).
 */
import type { EmbedTiming } from './engine.js';

/** The tenant of requests that carry no organization (authz sets `x-gateway-org-id` on every allowed one). */
export const ANONYMOUS_TENANT = 'anonymous';

/** The organization a request is scheduled for: the header authz set, else the shared anonymous tenant. */
export function tenantOf(headers: Readonly<Record<string, string | string[] | undefined>>): string {
  const org = headers['x-gateway-org-id'];
  return typeof org === 'string' && org !== '' ? org : ANONYMOUS_TENANT;
}

/** `x-tokenization-time`, `x-queue-time`, `x-inference-time` in whole milliseconds. */
export function timingHeaders(timing: EmbedTiming): Record<string, string> {
  const ms = (value: number): string => String(Math.max(0, Math.round(value)));
  return {
    'x-tokenization-time': ms(timing.tokenizeMs),
    'x-queue-time': ms(timing.queueMs),
    'x-inference-time': ms(timing.inferenceMs),
  };
}
