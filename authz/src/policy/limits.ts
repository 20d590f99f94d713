/**
 * Rate-limit math, pure, with the clock passed in: GCRA (generic cell rate algorithm), a
 * sliding window without fixed-window bursts at the boundaries. The settlement functions
 * (`contract/redis/settlement.lua`: authz's check, the embedder's admit and refund) run exactly
 * this arithmetic inside Redis; test/authz/limits-redis.test.ts feeds both the same sequence.
 *
 * A limit of L per period T emits one unit every T/L ms. The state is the theoretical arrival
 * time (TAT); a request of cost c is allowed when TAT' = max(TAT, now) + c·T/L is at most
 * now + T, so a fresh bucket admits L at once and then one every T/L. T/L is rarely an integer,
 * so TAT is kept exactly as whole milliseconds plus a fraction in 1/L-ths of a millisecond:
 * all arithmetic is on integers below 2^53, and "exactly L allowed" holds for every L.
 */
import type { OrgRecord } from '../../../contract/access-records.js';
import { PERIOD_MS } from '../../../contract/rate-period.js';

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

/** Why a Check was refused; 'budget' is the hard stop, decided in the same round trip (settlement.lua). */
export type LimitReason = 'none' | 'requests' | 'tokens' | 'budget';

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
 * One Check: refused while the token bucket has no room at all (the tokens themselves are
 * charged at admission, once the embedder has counted them), otherwise one request is taken
 * from the request bucket. Returns the outcome and the request-bucket state to store.
 */
export function evaluateCheck(
  requests: Tat | null,
  tokens: Tat | null,
  now: number,
  limits: Limits,
): { outcome: LimitOutcome; requestsTat: Tat } {
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

/** What admitting a request's tokens decided; the state to store when admitted. */
export interface AdmissionDecision {
  readonly outcome: 'admitted' | 'over_limit' | 'too_large';
  readonly tat: Tat | null;
  readonly tokensRemaining: number;
  readonly retryAfterMs: number;
}

/**
 * Charges `cost` tokens to a token bucket of `tpm` per minute, all or nothing, before any model
 * work. A request larger than the whole budget is `too_large`: no wait would ever admit it.
 */
export function evaluateAdmission(tokens: Tat | null, now: number, tpm: number, cost: number): AdmissionDecision {
  if (tpm <= 0 || cost > tpm) return { outcome: 'too_large', tat: tokens, tokensRemaining: 0, retryAfterMs: 0 };
  const charge = gcra(tokens, now, tpm, PERIOD_MS, cost);
  return {
    outcome: charge.allowed ? 'admitted' : 'over_limit',
    tat: charge.tat,
    tokensRemaining: charge.remaining,
    retryAfterMs: charge.retryAfterMs,
  };
}

/**
 * Gives back `cost` tokens charged to a bucket (a request that failed after its admission):
 * TAT moves back by cost·T/L, never before now, so a refund cannot create extra credit. Null
 * means the bucket is empty again.
 */
export function refundTokens(tokens: Tat | null, now: number, tpm: number, cost: number): Tat | null {
  if (!tokens || tpm <= 0) return tokens;
  const back = cost * PERIOD_MS;
  let ms = tokens.ms - Math.floor(back / tpm);
  let frac = tokens.frac - (back % tpm);
  if (frac < 0) {
    frac += tpm;
    ms -= 1;
  }
  return ms > now || (ms === now && frac > 0) ? { ms, frac } : null;
}

/**
 * The request-rate `x-ratelimit-*` headers (whole seconds, rounded up) for a Check. The token
 * headers come from the embedder once the request's tokens were admitted, so they report the
 * state after this request.
 */
export function rateLimitHeaders(outcome: LimitOutcome): Record<string, string> {
  return {
    'x-ratelimit-limit': String(outcome.limits.rpm),
    'x-ratelimit-remaining': String(outcome.requestsRemaining),
    'x-ratelimit-reset': String(Math.ceil(outcome.requestsResetMs / 1000)),
  };
}

/** `retry-after` for a refused outcome: whole seconds, at least 1. */
export function retryAfterSeconds(outcome: LimitOutcome): number {
  return Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
}
