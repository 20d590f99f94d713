/**
 * Baseline "the limit": onnxruntime-node session.run in one process on pre-tokenized,
 * padded batches of the bench texts, at each batch size; prints one JSON line.
 *   npx tsx bench/raw-ort.ts --model-dir DIR --kind short|note [--batches 8,16,32,64] [--seconds 4] [--threads N] [--opt all] [--texts N]
 * Also times the whole pipeline (tokenize + pad + run + pool) at the best batch size, which
 * is the work an embedder cannot skip.
 */
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { bodyTexts, clinicalTexts } from './corpus.ts';
import { lastCpuMsPerItem, measureRate, parseBaselineArgs } from './bench-args.ts';
import { loadTokenizer, padBatch, pool, readManifest, tokenize, type EncodedBatch } from './model-inputs.ts';

const args = parseBaselineArgs(process.argv.slice(2));
const manifest = readManifest(args.modelDir);
const tokenizer = loadTokenizer(args.modelDir);
// The embedder's session options (embedder/src/model/session.ts), so only the serving differs.
const options: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: args.threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: args.optLevel,
  executionMode: 'sequential',
  ...(args.spin ? {} : { extra: { session: { intra_op: { allow_spinning: '0' } } } }),
};
const session = await ort.InferenceSession.create(join(args.modelDir, 'model.onnx'), options);
const wantsTypes = session.inputNames.includes('token_type_ids');

function feeds(b: EncodedBatch): Record<string, ort.Tensor> {
  const dims = [b.rows, b.seq];
  const f: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', b.inputIds, dims),
    attention_mask: new ort.Tensor('int64', b.attentionMask, dims),
  };
  if (wantsTypes) f.token_type_ids = new ort.Tensor('int64', b.tokenTypeIds, dims);
  return f;
}

const texts = args.texts > 0 ? bodyTexts(args.kind, args.texts) : clinicalTexts(args.kind, 256);
const ids = tokenize(tokenizer, texts, manifest.maxTokens);
const perBatch: Record<string, number> = {};
const cpuMsPerInput: Record<string, number> = {};
for (const size of args.batches) {
  const batches: EncodedBatch[] = [];
  for (let i = 0; i + size <= ids.length; i += size) batches.push(padBatch(ids.slice(i, i + size)));
  perBatch[size] = await measureRate(args.seconds, async (i) => {
    const b = batches[i % batches.length] as EncodedBatch;
    await session.run(feeds(b));
    return b.rows;
  });
  cpuMsPerInput[size] = lastCpuMsPerItem;
}
const [bestBatch, bestRate] = Object.entries(perBatch).reduce((a, b) => (b[1] > a[1] ? b : a));
const best = Number(bestBatch);
const pipeline = await measureRate(args.seconds, async (i) => {
  const start = (i * best) % (texts.length - best + 1);
  const b = padBatch(tokenize(tokenizer, texts.slice(start, start + best), manifest.maxTokens));
  const out = await session.run(feeds(b));
  const states = out[manifest.outputName] as ort.Tensor;
  pool(states.data as Float32Array, b, states.dims[2] as number, manifest);
  return b.rows;
});
const meanTokens = ids.reduce((s, x) => s + x.length, 0) / ids.length;
console.log(
  JSON.stringify({
    baseline: 'raw-ort',
    model: manifest.id,
    kind: args.kind,
    meanTokens,
    perBatch,
    bestBatch: best,
    inputsPerS: bestRate,
    pipelineInputsPerS: pipeline,
    cpuMsPerInput,
    threads: args.threads,
    opt: args.optLevel,
    spin: args.spin,
  }),
);
