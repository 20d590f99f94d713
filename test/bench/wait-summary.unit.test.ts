/**
 * The WAIT part's arithmetic (bench/wait-summary.ts): medians per side, and the cost of WAIT as
 * the median of each round's own difference and ratio, not the difference of the medians.
 */
import { describe, expect, it } from 'vitest';
import { median, perCoreRate, summarizeWait, type WaitSample } from '../../bench/wait-summary.ts';

const sample = (cpuMs: number, primaryMs: number, replicaMs: number, p50Ms: number, p99Ms: number): WaitSample => ({
  cpuMs,
  primaryMs,
  replicaMs,
  p50Ms,
  p99Ms,
});

describe('the WAIT bench summary', () => {
  it('takes the median, the mean of the middle two for an even count', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('pairs each round: a load change between rounds moves both sides and not the added cost', () => {
    const s = summarizeWait([
      { standalone: sample(2.0, 0.2, 0, 5.0, 9.0), wait: sample(2.2, 0.25, 0.05, 5.5, 10.0) },
      // a busier round: both sides slower, WAIT's own share the same
      { standalone: sample(4.0, 0.4, 0, 9.0, 30.0), wait: sample(4.4, 0.5, 0.1, 9.6, 32.0) },
      { standalone: sample(3.0, 0.3, 0, 7.0, 12.0), wait: sample(3.3, 0.36, 0.06, 7.4, 13.0) },
    ]);
    expect(s.rounds).toBe(3);
    expect(s.standalone).toEqual(sample(3.0, 0.3, 0, 7.0, 12.0));
    expect(s.wait).toEqual(sample(3.3, 0.36, 0.06, 7.4, 13.0));
    expect(s.addedCpuMs).toBeCloseTo(0.3, 9);
    expect(s.addedRedisCpuMs).toBeCloseTo(0.12, 9);
    expect(s.addedP50Ms).toBeCloseTo(0.5, 9);
    expect(s.addedP99Ms).toBeCloseTo(1.0, 9);
    expect(s.cpuRatio).toBeCloseTo(1.1, 9);
    expect(s.cpuRatioRange[0]).toBeCloseTo(1.1, 9);
    expect(s.cpuRatioRange[1]).toBeCloseTo(1.1, 9);
  });

  it('reports a WAIT that costs nothing, or saves, as it was measured', () => {
    const s = summarizeWait([{ standalone: sample(2.0, 0.2, 0, 5, 9), wait: sample(1.9, 0.2, 0.02, 4.8, 8) }]);
    expect(s.addedCpuMs).toBeCloseTo(-0.1, 9);
    expect(s.cpuRatio).toBeCloseTo(0.95, 9);
  });

  it('refuses no rounds', () => {
    expect(() => summarizeWait([])).toThrow(/no rounds/);
  });

  it('turns CPU per request into requests/s per core', () => {
    expect(perCoreRate(0.25)).toBe(4000);
    expect(perCoreRate(0.5, 2)).toBe(4000);
    expect(perCoreRate(0)).toBe(Number.POSITIVE_INFINITY);
  });
});
