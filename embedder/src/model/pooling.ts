/**
 * Pooling of the model's last hidden state into one unit vector per input, zero-padded to the
 * API width. Pure: no model, no I/O.
 *
 * Zero-padding a unit vector keeps its length and every dot product with another padded vector,
 * so cosines are exactly those of the native vectors.
 */
import type { Pooling } from '../../../contract/model-manifest.js';

/** Shape of a [batch, seq, hidden] float32 output, row-major. */
export interface HiddenState {
  readonly data: Float32Array;
  readonly batch: number;
  readonly seq: number;
  readonly hidden: number;
}

/**
 * Pools each row (CLS = position 0; mean = average over the row's first `lengths[i]` positions,
 * which are exactly its attention-mask ones because padding is on the right), L2-normalises it,
 * and writes it zero-padded into a [batch, outDim] array.
 */
export function poolBatch(state: HiddenState, lengths: readonly number[], pooling: Pooling, outDim: number): Float32Array<ArrayBuffer> {
  const { data, batch, seq, hidden } = state;
  if (hidden > outDim) throw new Error(`model width ${hidden} exceeds the API width ${outDim}`);
  if (lengths.length !== batch) throw new Error(`expected ${batch} lengths, got ${lengths.length}`);
  const out = new Float32Array(batch * outDim);
  const acc = new Float64Array(hidden);
  for (let b = 0; b < batch; b++) {
    const length = lengths[b] ?? 0;
    if (length < 1 || length > seq) throw new Error(`row ${b}: length ${length} outside 1..${seq}`);
    acc.fill(0);
    const rows = pooling === 'cls' ? 1 : length;
    for (let t = 0; t < rows; t++) {
      const base = (b * seq + t) * hidden;
      for (let h = 0; h < hidden; h++) acc[h]! += data[base + h]!;
    }
    // The mean's 1/length factor cancels in the normalisation, so the sum is enough.
    writeUnit(acc, out, b * outDim);
  }
  return out;
}

/** Writes `v` scaled to unit length at `out[offset…]`; a zero vector stays zero (no NaN). */
function writeUnit(v: Float64Array, out: Float32Array, offset: number): void {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  // Same floor as sentence-transformers' normalize: avoids dividing by zero.
  const scale = 1 / Math.max(Math.sqrt(sum), 1e-12);
  for (let i = 0; i < v.length; i++) out[offset + i] = v[i]! * scale;
}
