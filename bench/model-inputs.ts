/**
 * What the baselines share: the model directory's manifest and tokenizer, texts encoded
 * into padded int64 batches exactly as a BERT session wants them, and pooling.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { readManifest, type ModelManifest } from '../contract/model-manifest.ts';

/** The manifest, as the embedder reads and checks it (contract/model-manifest.ts). */
export type Manifest = ModelManifest;
export { readManifest };

/** One padded batch: row-major [rows, seq] int64 tensors' data and the real lengths. */
export interface EncodedBatch {
  rows: number;
  seq: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  tokenTypeIds: BigInt64Array;
  lengths: number[];
}

/** Loads tokenizer.json of a model directory. */
export function loadTokenizer(modelDir: string): Tokenizer {
  return new Tokenizer(JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8')), {});
}

/** Token ids of each text, cut to maxTokens keeping the final [SEP] (what truncation does). */
export function tokenize(tokenizer: Tokenizer, texts: string[], maxTokens: number): number[][] {
  return texts.map((text) => {
    const ids = tokenizer.encode(text).ids;
    if (ids.length <= maxTokens) return ids;
    return [...ids.slice(0, maxTokens - 1), ids[ids.length - 1] as number];
  });
}

/** Pads token id lists to the longest one, the way a batcher fills a batch. */
export function padBatch(idLists: number[][]): EncodedBatch {
  const rows = idLists.length;
  const seq = Math.max(...idLists.map((ids) => ids.length));
  const inputIds = new BigInt64Array(rows * seq);
  const attentionMask = new BigInt64Array(rows * seq);
  idLists.forEach((ids, r) => {
    ids.forEach((id, i) => {
      inputIds[r * seq + i] = BigInt(id);
      attentionMask[r * seq + i] = 1n;
    });
  });
  return { rows, seq, inputIds, attentionMask, tokenTypeIds: new BigInt64Array(rows * seq), lengths: idLists.map((ids) => ids.length) };
}

/** Pools [rows, seq, hidden] states (mean over the mask, or CLS) and L2-normalises if asked. */
export function pool(states: Float32Array, batch: EncodedBatch, hidden: number, manifest: Manifest): Float32Array[] {
  const out: Float32Array[] = [];
  for (let r = 0; r < batch.rows; r++) {
    const v = new Float32Array(hidden);
    const n = manifest.pooling === 'cls' ? 1 : (batch.lengths[r] as number);
    for (let t = 0; t < n; t++) {
      const base = (r * batch.seq + t) * hidden;
      for (let h = 0; h < hidden; h++) v[h] = (v[h] as number) + (states[base + h] as number) / n;
    }
    if (manifest.normalize) {
      let norm = 0;
      for (const x of v) norm += x * x;
      norm = Math.sqrt(norm) || 1;
      for (let h = 0; h < hidden; h++) v[h] = (v[h] as number) / norm;
    }
    out.push(v);
  }
  return out;
}
