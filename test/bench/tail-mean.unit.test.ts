/**
 * The batch bench's steadier tail figure (bench/hey.ts tailMean): the mean of the slowest 5 %
 * of sorted latencies, beside p99 (quantile).
 */
import { describe, expect, it } from 'vitest';
import { quantile, tailMean } from '../../bench/hey.ts';

describe('tailMean', () => {
  it('averages the slowest 5 % of a sorted sample', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    // The slowest 5 of 100: 96…100.
    expect(tailMean(sorted)).toBe(98);
    expect(quantile(sorted, 0.99)).toBe(99);
  });

  it('moves less than p99 when one request of the tail changes', () => {
    const base = Array.from({ length: 200 }, (_, i) => 10 + i / 10);
    const spiked = [...base.slice(0, 197), 60, 61, 62];
    expect(quantile(spiked, 0.99) / quantile(base, 0.99)).toBeGreaterThan(2);
    expect(tailMean(spiked) / tailMean(base)).toBeLessThan(1.8);
  });

  it('takes the one value of a short sample, and is NaN for none', () => {
    expect(tailMean([7])).toBe(7);
    expect(tailMean([])).toBeNaN();
  });
});
