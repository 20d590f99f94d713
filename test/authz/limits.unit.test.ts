import { describe, expect, it } from 'vitest';
import {
  evaluateAdmission,
  evaluateCheck,
  gcra,
  refundTokens,
  limitsFor,
  rateLimitHeaders,
  retryAfterSeconds,
  type Tat,
} from '../../authz/src/policy/limits.js';

const N = Date.parse('2030-01-01T00:00:00Z');
const T = 60_000;

/** Takes `count` cost-1 units at `now`, threading the state. */
function takeMany(state: Tat | null, now: number, limit: number, count: number) {
  let current = state;
  const results = [];
  for (let i = 0; i < count; i += 1) {
    const result = gcra(current, now, limit, T, 1);
    if (result.allowed) current = result.tat;
    results.push(result);
  }
  return { state: current, results };
}

describe('gcra', () => {
  it('admits a fresh burst of exactly the limit, then refuses with exact retry timing', () => {
    const { state, results } = takeMany(null, N, 60, 61);
    expect(results.filter((r) => r.allowed)).toHaveLength(60);
    expect(results[0]).toMatchObject({ allowed: true, remaining: 59, resetMs: 1000, retryAfterMs: 0 });
    expect(results[59]).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
    expect(results[60]).toMatchObject({ allowed: false, remaining: 0, resetMs: 60_000, retryAfterMs: 1000 });
    expect(state).toEqual({ ms: N + 60_000, frac: 0 });
  });

  it('slides: one more unit frees up every T/L', () => {
    const { state } = takeMany(null, N, 60, 60);
    expect(gcra(state, N + 999, 60, T, 1).allowed).toBe(false);
    expect(gcra(state, N + 999, 60, T, 1).retryAfterMs).toBe(1);
    const later = gcra(state, N + 1000, 60, T, 1);
    expect(later).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
    expect(gcra(state, N + 30_000, 60, T, 1)).toMatchObject({ allowed: true, remaining: 29, resetMs: 31_000 });
  });

  it('is exact when T/L is not a whole number of milliseconds', () => {
    const { state, results } = takeMany(null, N, 7, 8);
    expect(results.filter((r) => r.allowed)).toHaveLength(7);
    expect(state).toEqual({ ms: N + 60_000, frac: 0 });
    // 60000/7 = 8571.43 ms per request.
    expect(results[7]).toMatchObject({ allowed: false, retryAfterMs: 8572 });
    expect(gcra(state, N + 8571, 7, T, 1).allowed).toBe(false);
    expect(gcra(state, N + 8572, 7, T, 1).allowed).toBe(true);
    expect(gcra(null, N, 7, T, 1)).toMatchObject({ tat: { ms: N + 8571, frac: 3 }, remaining: 6, resetMs: 8572 });
  });

  it('forgets state older than now', () => {
    expect(gcra({ ms: N - 5, frac: 3 }, N, 60, T, 1)).toMatchObject({ allowed: true, tat: { ms: N + 1000, frac: 0 }, remaining: 59 });
  });

  it('refuses everything at a limit of 0', () => {
    expect(gcra(null, N, 0, T, 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: T });
  });
});

/** The bucket after admitting `cost` tokens (test shorthand). */
function charged(tokens: Tat | null, now: number, tpm: number, cost: number): Tat | null {
  const decision = evaluateAdmission(tokens, now, tpm, cost);
  expect(decision.outcome).toBe('admitted');
  return decision.tat;
}

describe('evaluateCheck', () => {
  const limits = { rpm: 60, tpm: 1000 };

  it('takes one request and reports tokens left', () => {
    const tokens = charged(null, N, 1000, 250);
    expect(tokens).toEqual({ ms: N + 15_000, frac: 0 });
    const { outcome, requestsTat } = evaluateCheck(null, tokens, N, limits);
    expect(outcome).toMatchObject({
      allowed: true,
      reason: 'none',
      requestsRemaining: 59,
      requestsResetMs: 1000,
      tokensRemaining: 750,
      retryAfterMs: 0,
    });
    expect(requestsTat).toEqual({ ms: N + 1000, frac: 0 });
  });

  it('allows while the token budget is exactly used up (admission never overdraws it)', () => {
    const full = charged(null, N, 1000, 1000);
    expect(evaluateCheck(null, full, N, limits).outcome).toMatchObject({ allowed: true, tokensRemaining: 0 });
  });

  it('treats a token limit of 0 as suspended: every check refused', () => {
    expect(evaluateCheck(null, null, N, { rpm: 60, tpm: 0 }).outcome).toMatchObject({ allowed: false, reason: 'tokens' });
  });

  it('refuses over the request limit with retry-after in whole seconds', () => {
    let requests: Tat | null = null;
    for (let i = 0; i < 60; i += 1) requests = evaluateCheck(requests, null, N, limits).requestsTat;
    const { outcome } = evaluateCheck(requests, null, N, limits);
    expect(outcome).toMatchObject({
      allowed: false,
      reason: 'requests',
      requestsRemaining: 0,
      requestsResetMs: 60_000,
      retryAfterMs: 1000,
    });
    expect(retryAfterSeconds(outcome)).toBe(1);
    expect(rateLimitHeaders(outcome)).toEqual({
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
    });
  });

  it('rounds reset up to whole seconds', () => {
    const { outcome } = evaluateCheck(null, null, N, { rpm: 7, tpm: 1000 });
    expect(outcome.requestsResetMs).toBe(8572);
    expect(rateLimitHeaders(outcome)['x-ratelimit-reset']).toBe('9');
  });
});

describe('limitsFor', () => {
  it('uses organization overrides, else the defaults', () => {
    const org = { id: 'a', endpoints: [], models: [], rpm: 5, tpm: null, createdAt: 0 };
    expect(limitsFor(org, { rpm: 600, tpm: 1000 })).toEqual({ rpm: 5, tpm: 1000 });
  });
});

describe('evaluateAdmission', () => {
  it('charges all or nothing: exactly up to the limit, then over_limit with the wait until it fits', () => {
    const first = evaluateAdmission(null, N, 1000, 400);
    expect(first).toEqual({ outcome: 'admitted', tat: { ms: N + 24_000, frac: 0 }, tokensRemaining: 600, retryAfterMs: 0 });
    const second = evaluateAdmission(first.tat, N, 1000, 400);
    expect(second).toMatchObject({ outcome: 'admitted', tokensRemaining: 200 });
    const third = evaluateAdmission(second.tat, N, 1000, 400);
    // Nothing taken; 200 more tokens free up in 12 s.
    expect(third).toEqual({ outcome: 'over_limit', tat: second.tat, tokensRemaining: 200, retryAfterMs: 12_000 });
    expect(evaluateAdmission(second.tat, N + 12_000, 1000, 400).outcome).toBe('admitted');
  });

  it('calls a request larger than the whole budget too_large, whatever the bucket holds', () => {
    expect(evaluateAdmission(null, N, 1000, 1001)).toMatchObject({ outcome: 'too_large', tat: null, retryAfterMs: 0 });
    expect(evaluateAdmission(null, N, 1000, 1000).outcome).toBe('admitted');
    expect(evaluateAdmission(null, N, 0, 1).outcome).toBe('too_large');
  });

  it('keeps fractions exact when 60 s / tpm is not whole', () => {
    let tat: Tat | null = null;
    for (let i = 0; i < 7; i++) tat = charged(tat, N, 7, 1);
    expect(evaluateAdmission(tat, N, 7, 1).outcome).toBe('over_limit');
  });
});

describe('refundTokens', () => {
  it('gives back exactly what was charged, never more than an empty bucket', () => {
    const after = charged(charged(null, N, 1000, 400), N, 1000, 300);
    expect(refundTokens(after, N, 1000, 300)).toEqual(charged(null, N, 1000, 400));
    expect(refundTokens(after, N, 1000, 700)).toBeNull();
    expect(refundTokens(after, N, 1000, 5_000)).toBeNull();
    expect(refundTokens(null, N, 1000, 10)).toBeNull();
  });

  it('keeps fractions exact', () => {
    const one = charged(null, N, 7, 1);
    const two = charged(one, N, 7, 1);
    expect(refundTokens(two, N, 7, 1)).toEqual(one);
  });
});
