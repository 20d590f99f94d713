/**
 * Rate-limit math, pure, with the clock passed in: GCRA (generic cell rate algorithm), a
 * sliding window without fixed-window bursts at the boundaries. `store/check-limits.lua` and
 * `store/record-usage.lua` run exactly this arithmetic inside Redis; a test feeds both the same
 * sequence and compares.
 *
 * A limit of L per period T emits one unit every T/L ms. The state is the theoretical arrival
 * time (TAT); a request of cost c is allowed when TAT' = max(TAT, now) + c·T/L is at most
 * now + T, so a fresh bucket admits L at once and then one every T/L. T/L is rarely an integer,
 * so TAT is kept exactly as whole milliseconds plus a fraction in 1/L-ths of a millisecond:
 * all arithmetic is on integers below 2^53, and "exactly L allowed" holds for every L.
 */
import type { OrgRecord } from './access.js';

export const PERIOD_MS = 60_000;

/** TAT = ms + frac / limit, with 0 <= frac < limit. */
export interface Tat {
  readonly ms: number;
  readonly frac: number;
}

export interface GcraResult {
  readonly allowed: boolean;
  /** The state to store (unchanged when refused). */
  readonly tat: Tat;
  /** Further cost-1 units that would be allowed right now. */
  readonly remaining: number;
  /** Milliseconds until the bucket is completely free again. */
  readonly resetMs: number;
  /** Milliseconds until this request would be allowed (0 when allowed). */
  readonly retryAfterMs: number;
}

/** Applies one request of `cost` units to a GCRA bucket of `limit` per `periodMs`. */
export function gcra(state: Tat | null, now: number, limit: number, periodMs: number, cost: number): GcraResult {
  if (limit <= 0) return { allowed: false, tat: { ms: now, frac: 0 }, remaining: 0, resetMs: 0, retryAfterMs: periodMs };
  const base = state && (state.ms > now || (state.ms === now && state.frac > 0)) ? state : { ms: now, frac: 0 };
  const num = base.frac + cost * periodMs;
  const next = { ms: base.ms + Math.floor(num / limit), frac: num % limit };
  // Scaled by limit: (TAT' - T - now)·L, exact in integers.
  const excess = (next.ms - periodMs - now) * limit + next.frac;
  if (excess <= 0) {
    return { allowed: true, tat: next, remaining: unitsLeft(next, now, limit, periodMs), resetMs: msUntil(next, now), retryAfterMs: 0 };
  }
  return {
    allowed: false,
    tat: base,
    remaining: unitsLeft(base, now, limit, periodMs),
    resetMs: msUntil(base, now),
    retryAfterMs: next.ms - periodMs - now + (next.frac > 0 ? 1 : 0),
  };
}

function unitsLeft(tat: Tat, now: number, limit: number, periodMs: number): number {
  return Math.max(0, Math.floor(((now + periodMs - tat.ms) * limit - tat.frac) / periodMs));
}

function msUntil(tat: Tat, now: number): number {
  return Math.max(0, tat.ms - now + (tat.frac > 0 ? 1 : 0));
}

export interface Limits {
  readonly rpm: number;
  readonly tpm: number;
}

/** The organization's limits, its overrides falling back to the defaults. */
export function limitsFor(org: OrgRecord, defaults: Limits): Limits {
  return { rpm: org.rpm ?? defaults.rpm, tpm: org.tpm ?? defaults.tpm };
}

export type LimitReason = 'none' | 'requests' | 'tokens';

export interface LimitOutcome {
  readonly allowed: boolean;
  readonly reason: LimitReason;
  readonly limits: Limits;
  readonly requestsRemaining: number;
  readonly requestsResetMs: number;
  readonly tokensRemaining: number;
  readonly retryAfterMs: number;
}

/**
 * One Check: refused while the token bucket is over its limit (tokens are debited after the
 * response, so the check itself costs none), otherwise one request is taken from the request
 * bucket. Returns the outcome and the request-bucket state to store.
 */
export function evaluateCheck(requests: Tat | null, tokens: Tat | null, now: number, limits: Limits): { outcome: LimitOutcome; requestsTat: Tat } {
  const tok = gcra(tokens, now, limits.tpm, PERIOD_MS, 0);
  const req = tok.allowed ? gcra(requests, now, limits.rpm, PERIOD_MS, 1) : gcra(requests, now, limits.rpm, PERIOD_MS, 0);
  const reason: LimitReason = !tok.allowed ? 'tokens' : !req.allowed ? 'requests' : 'none';
  const outcome: LimitOutcome = {
    allowed: reason === 'none',
    reason,
    limits,
    requestsRemaining: req.remaining,
    requestsResetMs: req.resetMs,
    tokensRemaining: tok.remaining,
    retryAfterMs: reason === 'tokens' ? tok.retryAfterMs : req.retryAfterMs,
  };
  return { outcome, requestsTat: req.tat };
}

/** Debits used tokens after the fact; the bucket may go over, which refuses later checks. */
export function debitTokens(tokens: Tat | null, now: number, tpm: number, used: number): Tat | null {
  if (tpm <= 0) return tokens;
  const base = tokens && (tokens.ms > now || (tokens.ms === now && tokens.frac > 0)) ? tokens : { ms: now, frac: 0 };
  const num = base.frac + used * PERIOD_MS;
  return { ms: base.ms + Math.floor(num / tpm), frac: num % tpm };
}

/** The `x-ratelimit-*` headers (whole seconds, rounded up) for an outcome. */
export function rateLimitHeaders(outcome: LimitOutcome): Record<string, string> {
  return {
    'x-ratelimit-limit': String(outcome.limits.rpm),
    'x-ratelimit-remaining': String(outcome.requestsRemaining),
    'x-ratelimit-reset': String(Math.ceil(outcome.requestsResetMs / 1000)),
    'x-ratelimit-limit-tokens': String(outcome.limits.tpm),
    'x-ratelimit-remaining-tokens': String(outcome.tokensRemaining),
  };
}

/** `retry-after` for a refused outcome: whole seconds, at least 1. */
export function retryAfterSeconds(outcome: LimitOutcome): number {
  return Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
}
