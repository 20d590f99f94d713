/**
 * The budget gate's single flight: concurrent Checks of an organization not cached share one
 * read (a burst of a new organization's requests is one round trip, not ~30 commands each), a
 * failed read reaches every Check that shared it and is not kept, and the next read is fresh.
 * The store is a stand-in whose reads the test completes by hand.
 */
import { describe, expect, it } from 'vitest';
import { BudgetGate } from '../../authz/src/edge/budget-gate.js';
import type { Budget } from '../../contract/budget.js';

const NOW = Date.parse('2031-03-10T12:00:00Z');

function heldStore() {
  const reads: Array<{ resolve: (v: { budget: Budget | null; usedTokens: number }) => void; reject: (e: Error) => void }> = [];
  return {
    reads,
    withUsage: () => new Promise<{ budget: Budget | null; usedTokens: number }>((resolve, reject) => reads.push({ resolve, reject })),
  };
}

describe('BudgetGate', () => {
  it('answers 100 concurrent Checks of one organization from one read', async () => {
    const store = heldStore();
    const gate = new BudgetGate(store);
    const answers = Array.from({ length: 100 }, () => gate.check('acme', NOW));
    expect(store.reads).toHaveLength(1);
    store.reads[0]!.resolve({ budget: { monthlyTokens: 10, hardStop: true, alertPercents: [] }, usedTokens: 10 });
    const denials = await Promise.all(answers);
    expect(new Set(denials.map((d) => d?.code))).toEqual(new Set(['rate_limit_exceeded']));
    // Cached now: no further read within the cache interval.
    await gate.check('acme', NOW + 1);
    expect(store.reads).toHaveLength(1);
  });

  it('fails every Check that shared a failed read, keeps nothing, and reads again next time', async () => {
    const store = heldStore();
    const gate = new BudgetGate(store);
    const shared = [gate.check('acme', NOW), gate.check('acme', NOW)];
    store.reads[0]!.reject(new Error('redis unavailable'));
    for (const answer of shared) await expect(answer).rejects.toThrow('redis unavailable');
    const next = gate.check('acme', NOW);
    expect(store.reads).toHaveLength(2);
    store.reads[1]!.resolve({ budget: null, usedTokens: 0 });
    expect(await next).toBeNull();
  });
});
