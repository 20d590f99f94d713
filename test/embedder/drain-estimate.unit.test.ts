/** The honest retry-after (issue 25): the drain time of an organization's queued work at its share of the measured pace. */
import { describe, expect, it } from 'vitest';
import { DrainEstimate } from '../../embedder/src/core/drain-estimate.js';

function measured(tokensPerSecond: number): DrainEstimate {
  const estimate = new DrainEstimate();
  for (let i = 0; i < 100; i++) estimate.observe(tokensPerSecond, 1);
  return estimate;
}

describe('DrainEstimate', () => {
  it("says when the organization's queue will have drained, with a margin, at the measured pace", () => {
    const ms = measured(1000).refused('org', { tokens: 1000, queued: 2000, waiting: 1 }, 0);
    expect(ms).toBeGreaterThan(2000);
    expect(ms).toBeLessThan(2500);
  });

  it('tells parallel refused requests to come back one after another, not all at once', () => {
    const estimate = measured(1000);
    const waits = [0, 1, 2].map(() => estimate.refused('org', { tokens: 1000, queued: 1000, waiting: 1 }, 0));
    expect(waits[1]! - waits[0]!).toBeGreaterThan(1000);
    expect(waits[2]! - waits[1]!).toBeGreaterThan(1000);
    // Another organization's requests are not behind this one's.
    expect(estimate.refused('other', { tokens: 1000, queued: 1000, waiting: 1 }, 0)).toBe(waits[0]);
  });

  it('an admitted request frees its slot; slots nobody came back for are forgotten', () => {
    const estimate = measured(1000);
    const first = estimate.refused('org', { tokens: 1000, queued: 1000, waiting: 1 }, 0);
    estimate.admitted('org');
    expect(estimate.refused('org', { tokens: 1000, queued: 1000, waiting: 1 }, 0)).toBe(first);
    const late = estimate.refused('org', { tokens: 1000, queued: 1000, waiting: 1 }, 600_000);
    expect(late).toBeLessThan(2000);
  });

  it('shares the pace between the organizations waiting, and waits for the whole queue when that is what is full', () => {
    const estimate = measured(1000);
    const alone = estimate.refused('a', { tokens: 10, queued: 1000, waiting: 1 }, 0);
    const shared = estimate.refused('b', { tokens: 10, queued: 1000, waiting: 4 }, 0);
    expect(shared / alone).toBeGreaterThan(3.5);
    expect(estimate.refused('c', { tokens: 10, queued: 0, waiting: 2, global: 5000 }, 0)).toBeGreaterThan(5000);
  });
});
