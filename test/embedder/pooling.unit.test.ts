import { describe, expect, it } from 'vitest';
import { poolBatch } from '../../embedder/src/model/pooling.js';
import { padBatch } from '../../embedder/src/model/session.js';

const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i]!, 0);
const row = (v: Float32Array, i: number, width: number): Float32Array => v.subarray(i * width, (i + 1) * width);

// batch 2, seq 3, hidden 2; row 1 has length 2 (its position 2 is padding and must be ignored).
const state = {
  data: Float32Array.from([3, 4, 1, 0, 0, 1, /* row 1 */ 0, 2, 2, 0, 100, 100]),
  batch: 2,
  seq: 3,
  hidden: 2,
};

describe('pooling', () => {
  it('CLS takes position 0 and normalises', () => {
    const out = poolBatch(state, [3, 2], 'cls', 2);
    expect(Array.from(row(out, 0, 2))).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
    expect(Array.from(row(out, 1, 2))).toEqual([0, 1]);
  });

  it('mean averages only the positions under the attention mask', () => {
    const out = poolBatch(state, [3, 2], 'mean', 2);
    // row 0: mean (4/3, 5/3) → (4, 5)/√41; row 1: mean (1, 1) → (1, 1)/√2 — padding (100, 100) ignored.
    expect(row(out, 0, 2)[0]).toBeCloseTo(4 / Math.sqrt(41), 6);
    expect(row(out, 0, 2)[1]).toBeCloseTo(5 / Math.sqrt(41), 6);
    expect(row(out, 1, 2)[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(row(out, 1, 2)[1]).toBeCloseTo(Math.SQRT1_2, 6);
  });

  it('zero-pads to the API width keeping unit length and every cosine', () => {
    const native = poolBatch(state, [3, 2], 'mean', 2);
    const padded = poolBatch(state, [3, 2], 'mean', 1024);
    expect(padded).toHaveLength(2 * 1024);
    for (const i of [0, 1]) {
      expect(dot(row(padded, i, 1024), row(padded, i, 1024))).toBeCloseTo(1, 6);
      expect(Array.from(row(padded, i, 1024).subarray(2)).every((x) => x === 0)).toBe(true);
    }
    expect(dot(row(padded, 0, 1024), row(padded, 1, 1024))).toBeCloseTo(dot(row(native, 0, 2), row(native, 1, 2)), 6);
  });

  it('leaves an all-zero output at zero instead of NaN, and refuses a model wider than the API', () => {
    const zero = { data: new Float32Array(4), batch: 1, seq: 2, hidden: 2 };
    expect(Array.from(poolBatch(zero, [2], 'mean', 4))).toEqual([0, 0, 0, 0]);
    expect(() => poolBatch(state, [3, 2], 'mean', 1)).toThrow(/exceeds the API width/);
    expect(() => poolBatch(state, [4, 2], 'mean', 2)).toThrow(/length 4/);
  });

  it('pads ragged rows on the right with a mask of their real lengths', () => {
    const batch = padBatch(Int32Array.from([101, 7, 102, 101, 102]), Int32Array.from([3, 2]));
    expect(batch.seq).toBe(3);
    expect(Array.from(batch.ids)).toEqual([101n, 7n, 102n, 101n, 102n, 0n]);
    expect(Array.from(batch.mask)).toEqual([1n, 1n, 1n, 1n, 1n, 0n]);
  });
});
