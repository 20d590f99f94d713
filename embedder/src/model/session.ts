/**
 * The ONNX Runtime session: the only importer of onnxruntime-node. It runs inside the model
 * worker (model/worker.ts), because onnxruntime-node 1.30's `run()` and session creation are
 * synchronous native calls that would block the event loop for the whole inference.
 */
import * as ort from 'onnxruntime-node';
import { disableOrtTelemetry } from './ort-telemetry.js';
import type { HiddenState } from './pooling.js';

/** A padded batch: row-major [batch, seq] token ids, real lengths per row (padding on the right). */
export interface PaddedBatch {
  readonly ids: BigInt64Array;
  readonly mask: BigInt64Array;
  readonly batch: number;
  readonly seq: number;
}

/** Right-pads ragged rows into one [batch, seq] tensor pair; the mask marks the real tokens. */
export function padBatch(ids: Int32Array, lengths: Int32Array): PaddedBatch {
  const batch = lengths.length;
  const seq = Math.max(...lengths);
  // Pad id 0 is never attended to (mask 0) and padded positions are not pooled, so its value is moot.
  const paddedIds = new BigInt64Array(batch * seq);
  const mask = new BigInt64Array(batch * seq);
  let offset = 0;
  for (let b = 0; b < batch; b++) {
    const length = lengths[b]!;
    for (let t = 0; t < length; t++) {
      paddedIds[b * seq + t] = BigInt(ids[offset + t]!);
      mask[b * seq + t] = 1n;
    }
    offset += length;
  }
  return { ids: paddedIds, mask, batch, seq };
}

export interface ModelSession {
  readonly inputNames: readonly string[];
  run(batch: PaddedBatch): Promise<HiddenState>;
  dispose(): Promise<void>;
}

/** Opens `modelPath` with the house options: `threads` intra-op threads, full graph optimisation. */
export async function openSession(modelPath: string, threads: number, outputName: string): Promise<ModelSession> {
  // Only effective on the main thread (tests, benchmarks); the embedder's runner sets it for its worker.
  disableOrtTelemetry();
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    // No spin-waiting between ops: on 2 cores the spinning intra-op thread takes the CPU that
    // the event loop, Envoy and authz need (BENCHMARKS.md: 25-50 % less CPU per input).
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  });
  for (const name of ['input_ids', 'attention_mask']) {
    if (!session.inputNames.includes(name)) throw new Error(`model has no input named ${name}`);
  }
  if (!session.outputNames.includes(outputName)) throw new Error(`model has no output named ${outputName}`);
  const wantsTypeIds = session.inputNames.includes('token_type_ids');

  return {
    inputNames: session.inputNames,
    async run(batch: PaddedBatch): Promise<HiddenState> {
      const dims = [batch.batch, batch.seq];
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', batch.ids, dims),
        attention_mask: new ort.Tensor('int64', batch.mask, dims),
      };
      // One segment only, so every token type id is 0.
      if (wantsTypeIds) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(batch.ids.length), dims);
      const output = (await session.run(feeds, [outputName]))[outputName];
      if (output?.type !== 'float32' || output.dims.length !== 3) {
        throw new Error(`model output ${outputName} is not a float32 [batch, seq, hidden] tensor`);
      }
      const [b, s, hidden] = output.dims as [number, number, number];
      return { data: output.data as Float32Array, batch: b, seq: s, hidden };
    },
    dispose: () => session.release(),
  };
}
