/**
 * Tuning part "int8": vectors of a candidate model against a reference model on a fixed set of
 * clinical sentences and notes (cosine per input), plus raw session.run cost of each (CPU ms
 * per input at batch 8 for sentences, 4 for notes).
 *   npx tsx bench/quant-compare.ts --reference DIR --candidate DIR [--label NAME] [--seconds 3]
 * Prints one JSON line; the candidate is acceptable only if the minimum cosine is ≥ 0.99.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { runScriptJson } from './child-json.ts';
import { clinicalTexts } from './corpus.ts';
import { loadTokenizer, padBatch, pool, readManifest, tokenize } from './model-inputs.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    reference: { type: 'string' },
    candidate: { type: 'string' },
    label: { type: 'string', default: '' },
    seconds: { type: 'string', default: '3' },
  },
});
const reference = values.reference as string;
const candidate = values.candidate as string;
const MIN_COSINE = 0.99;

/** Pooled, normalised vectors of `texts` (one at a time: no padding effects in the comparison). */
async function embed(dir: string, texts: string[]): Promise<Float32Array[]> {
  const manifest = readManifest(dir);
  const tokenizer = loadTokenizer(dir);
  const session = await ort.InferenceSession.create(join(dir, 'model.onnx'), { intraOpNumThreads: 2, graphOptimizationLevel: 'all' });
  const out: Float32Array[] = [];
  for (const ids of tokenize(tokenizer, texts, manifest.maxTokens)) {
    const b = padBatch([ids]);
    const dims = [1, b.seq];
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', b.inputIds, dims),
      attention_mask: new ort.Tensor('int64', b.attentionMask, dims),
    };
    if (session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', b.tokenTypeIds, dims);
    const states = (await session.run(feeds))[manifest.outputName] as ort.Tensor;
    out.push(...pool(states.data as Float32Array, b, states.dims[2] as number, manifest));
  }
  await session.release();
  return out;
}

const texts = [...clinicalTexts('short', 48, 11), ...clinicalTexts('note', 16, 11)];
const [a, b] = [await embed(reference, texts), await embed(candidate, texts)];
const cosines = a.map((v, i) => v.reduce((s, x, h) => s + x * (b[i] as Float32Array)[h]!, 0));
// Speed as CPU time per input with spin-waiting off (wall-clock rates swing with whatever else
// runs on the 2 cores; CPU per input is the work itself), and the rate for reference.
const speed = async (dir: string, kind: string, batch: string): Promise<{ perS: number; cpuMsPerInput: number }> => {
  const r = await runScriptJson<{ inputsPerS: number; cpuMsPerInput: Record<string, number> }>('bench/raw-ort.ts', [
    '--model-dir',
    dir,
    '--kind',
    kind,
    '--batches',
    batch,
    '--seconds',
    values.seconds as string,
    '--spin',
    '0',
  ]);
  return { perS: r.inputsPerS, cpuMsPerInput: r.cpuMsPerInput[batch] as number };
};
const minCosine = Math.min(...cosines);
const short = { reference: await speed(reference, 'short', '8'), candidate: await speed(candidate, 'short', '8') };
const note = { reference: await speed(reference, 'note', '4'), candidate: await speed(candidate, 'note', '4') };
console.log(
  JSON.stringify({
    label: values.label,
    reference: readManifest(reference).id,
    candidate: readManifest(candidate).id,
    inputs: texts.length,
    minCosine,
    meanCosine: cosines.reduce((s, c) => s + c, 0) / cosines.length,
    accepted: minCosine >= MIN_COSINE,
    short,
    note,
    cpuSpeedupShort: short.reference.cpuMsPerInput / short.candidate.cpuMsPerInput,
    cpuSpeedupNote: note.reference.cpuMsPerInput / note.candidate.cpuMsPerInput,
  }),
);
