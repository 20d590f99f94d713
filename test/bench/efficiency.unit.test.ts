/**
 * The efficiency bench's own arithmetic (bench/efficiency.ts): a grant pool sized for a whole
 * case, so no grant is issued inside the timed window on the cores being measured; and the worst
 * goal case's ratio, which must not read as a goal met when no goal case ran.
 */
import { describe, expect, it } from 'vitest';
import { grantsFor, worstCase } from '../../bench/efficiency.ts';

describe('grantsFor (bench/efficiency.ts)', () => {
  it('issues enough grants for a whole case at twice raw ORT pace, so none are issued inside the window', () => {
    // One sentence a request at raw ORT's 250/s for 8 s: the old fixed 2,000 ran out after ~6 s.
    expect(grantsFor({ strings: 1 }, 250, 8)).toBe(4_000);
    expect(grantsFor({ strings: 1 }, 280.2, 8)).toBe(4_484);
  });

  it('stays between 2,000 and 20,000, and falls back to 5,000 without a raw ORT figure', () => {
    expect(grantsFor({ strings: 32 }, 250, 8)).toBe(2_000);
    expect(grantsFor({ strings: 1 }, 3_000, 10)).toBe(20_000);
    expect(grantsFor({ strings: 1 }, Number.NaN, 8)).toBe(5_000);
  });
});

describe('worstCase (bench/efficiency.ts)', () => {
  it('is the lowest ratio, and NaN (not Infinity, a goal met) when no goal case ran', () => {
    expect(worstCase([1.1, 0.81, 1.2])).toBe(0.81);
    expect(worstCase([])).toBeNaN();
  });
});
