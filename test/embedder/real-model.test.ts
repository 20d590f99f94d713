/**
 * The real default model (.local/models/default, installed by scripts/install-model.sh; `make
 * test` installs it first). Missing model = failure, not a skip.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest } from '../../contract/model-manifest.js';
import { DEFAULT_MODEL_DIR, testGrant, startTestEmbedder, type TestEmbedder } from '../support/embedder-app.js';

let embedder: TestEmbedder;
const dot = (a: number[], b: number[]): number => a.reduce((s, x, i) => s + x * b[i]!, 0);

beforeAll(async () => {
  for (const file of ['model.onnx', 'tokenizer.json', 'manifest.json']) {
    if (!existsSync(join(DEFAULT_MODEL_DIR, file))) {
      throw new Error(`${join(DEFAULT_MODEL_DIR, file)} is missing: run \`bash scripts/install-model.sh\``);
    }
  }
  embedder = await startTestEmbedder(DEFAULT_MODEL_DIR);
});
afterAll(async () => embedder?.close());

async function vectors(input: string[], inputType?: 'query' | 'document'): Promise<number[][]> {
  const res = await embedder.app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    headers: testGrant({ model: embedder.engine.modelId }),
    payload: { model: embedder.engine.modelId, input, ...(inputType ? { input_type: inputType } : {}) },
  });
  expect(res.statusCode).toBe(200);
  return res.json().data.map((d: { embedding: number[] }) => d.embedding);
}

describe('the default model', () => {
  it('serves the manifest id with 1024-d unit vectors', async () => {
    expect(embedder.engine.modelId).toBe(readManifest(DEFAULT_MODEL_DIR).id);
    const [v] = await vectors(['chest pain']);
    expect(v).toHaveLength(1024);
    expect(dot(v!, v!)).toBeCloseTo(1, 5);
  });

  it('scores a clinical paraphrase above an unrelated pair', async () => {
    const [mi, heartAttack, femur] = await vectors(['myocardial infarction', 'heart attack', 'fractured femur']);
    expect(dot(mi!, heartAttack!)).toBeGreaterThan(dot(mi!, femur!));
  });

  it('query vectors differ from document vectors; document equals no input_type', async () => {
    const text = ['patient with type 2 diabetes on metformin'];
    const [[query], [document], [none]] = await Promise.all([vectors(text, 'query'), vectors(text, 'document'), vectors(text)]);
    expect(query).not.toEqual(document);
    expect(dot(query!, document!)).toBeLessThan(0.9999);
    expect(document).toEqual(none);
  });
});
