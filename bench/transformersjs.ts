/**
 * Baseline "what a Node user would pick instead": @huggingface/transformers' feature-extraction
 * pipeline on the same model.onnx, pooling/normalize as the manifest says; prints one JSON line.
 *   npx tsx bench/transformersjs.ts --model-dir DIR --kind short|note [--batches 8,32] [--seconds 4] [--threads N] [--texts N]
 * transformers.js wants a Hugging Face style folder; one is built under .local/bench/hf/<id>
 * (config.json, tokenizer files, onnx/model.onnx as a symlink), nothing is downloaded.
 */
import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { env, pipeline } from '@huggingface/transformers';
import { bodyTexts, clinicalTexts } from './corpus.ts';
import { lastCpuMsPerItem, measureRate, parseBaselineArgs } from './bench-args.ts';
import { readManifest, type Manifest } from './model-inputs.ts';

/** Builds the local transformers.js model folder for a model directory; returns its parent and name. */
function buildHfFolder(modelDir: string, manifest: Manifest): { root: string; name: string } {
  const root = resolve('.local/bench/hf');
  const dir = join(root, manifest.id);
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: manifest.nativeDimensions,
      max_position_embeddings: 512,
      type_vocab_size: 2,
      vocab_size: 30522,
      pad_token_id: 0,
    }),
  );
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: manifest.maxTokens,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
    }),
  );
  copyFileSync(join(modelDir, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  rmSync(join(dir, 'onnx', 'model.onnx'), { force: true });
  symlinkSync(resolve(modelDir, 'model.onnx'), join(dir, 'onnx', 'model.onnx'));
  return { root, name: manifest.id };
}

const args = parseBaselineArgs(process.argv.slice(2));
const manifest = readManifest(args.modelDir);
const { root, name } = buildHfFolder(args.modelDir, manifest);
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = `${root}/`;
// The embedder's session options (embedder/src/model/session.ts), so only the library differs.
const sessionOptions = {
  intraOpNumThreads: args.threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: args.optLevel,
  executionMode: 'sequential' as const,
  ...(args.spin ? {} : { extra: { session: { intra_op: { allow_spinning: '0' } } } }),
};
const extractor = await pipeline('feature-extraction', name, {
  local_files_only: true,
  dtype: 'fp32',
  device: 'cpu',
  session_options: sessionOptions,
});
const texts = args.texts > 0 ? bodyTexts(args.kind, args.texts) : clinicalTexts(args.kind, 256);
const pooling = manifest.pooling === 'cls' ? 'cls' : 'mean';
const perBatch: Record<string, number> = {};
const cpuMsPerInput: Record<string, number> = {};
for (const size of args.batches) {
  perBatch[size] = await measureRate(args.seconds, async (i) => {
    const start = (i * size) % (texts.length - size + 1);
    const out = await extractor(texts.slice(start, start + size), { pooling, normalize: manifest.normalize });
    if (out.dims[1] !== manifest.nativeDimensions) throw new Error(`unexpected output width ${out.dims[1]}`);
    return size;
  });
  cpuMsPerInput[size] = lastCpuMsPerItem;
}
const [bestBatch, bestRate] = Object.entries(perBatch).reduce((a, b) => (b[1] > a[1] ? b : a));
console.log(
  JSON.stringify({
    baseline: 'transformersjs',
    model: manifest.id,
    kind: args.kind,
    perBatch,
    cpuMsPerInput,
    bestBatch: Number(bestBatch),
    inputsPerS: bestRate,
  }),
);
