/**
 * The values policy returns. Being denied is a value, never an exception: only faults
 * (Redis unreachable, a bug) throw, and the gRPC edge decides what they become.
 */
import type { ProblemCode } from '../../../openapi/problems.js';

/** A refusal with the problem code and a detail safe to show the client (no request text). */
export interface Deny {
  readonly kind: 'deny';
  readonly code: ProblemCode;
  readonly detail: string;
}

/** True when a policy result is a refusal. */
export function isDeny(value: unknown): value is Deny {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'deny';
}
