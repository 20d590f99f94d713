import { describe, expect, it } from 'vitest';
import { debitTokens, evaluateCheck, gcra, limitsFor, rateLimitHeaders, retryAfterSeconds, type Tat } from '../../authz/src/policy/limits.js';

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

describe('evaluateCheck and debitTokens', () => {
  const limits = { rpm: 60, tpm: 1000 };

  it('takes one request and reports tokens left', () => {
    const tokens = debitTokens(null, N, 1000, 250);
    expect(tokens).toEqual({ ms: N + 15_000, frac: 0 });
    const { outcome, requestsTat } = evaluateCheck(null, tokens, N, limits);
    expect(outcome).toMatchObject({ allowed: true, reason: 'none', requestsRemaining: 59, requestsResetMs: 1000, tokensRemaining: 750, retryAfterMs: 0 });
    expect(requestsTat).toEqual({ ms: N + 1000, frac: 0 });
  });

  it('allows at exactly the token limit and refuses one token past it, without taking a request', () => {
    const full = debitTokens(null, N, 1000, 1000);
    expect(evaluateCheck(null, full, N, limits).outcome).toMatchObject({ allowed: true, tokensRemaining: 0 });
    const over = debitTokens(full, N, 1000, 1);
    const { outcome, requestsTat } = evaluateCheck(null, over, N, limits);
    expect(outcome).toMatchObject({ allowed: false, reason: 'tokens', requestsRemaining: 60, tokensRemaining: 0, retryAfterMs: 60 });
    expect(requestsTat).toEqual({ ms: N, frac: 0 });
    expect(retryAfterSeconds(outcome)).toBe(1);
    expect(evaluateCheck(null, over, N + 60, limits).outcome.allowed).toBe(true);
  });

  it('treats a token limit of 0 as suspended: nothing to debit, every check refused', () => {
    expect(debitTokens(null, N, 0, 500)).toBeNull();
    expect(evaluateCheck(null, null, N, { rpm: 60, tpm: 0 }).outcome).toMatchObject({ allowed: false, reason: 'tokens' });
  });

  it('refuses over the request limit with retry-after in whole seconds', () => {
    let requests: Tat | null = null;
    for (let i = 0; i < 60; i += 1) requests = evaluateCheck(requests, null, N, limits).requestsTat;
    const { outcome } = evaluateCheck(requests, null, N, limits);
    expect(outcome).toMatchObject({ allowed: false, reason: 'requests', requestsRemaining: 0, requestsResetMs: 60_000, retryAfterMs: 1000 });
    expect(retryAfterSeconds(outcome)).toBe(1);
    expect(rateLimitHeaders(outcome)).toEqual({
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '60',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '1000',
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
