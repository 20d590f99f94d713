/**
 * What the embedder does for clients that cannot send every body field, and for indexes that
 * must trust their vectors (issue 20): `dimensions: null` is "not set"; `x-input-type` stands in
 * for `input_type`; every 200 names the model's fingerprint; truncation is reported. Through
 * inject() with the generated test model.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { modelFingerprint } from '../../embedder/src/model/fingerprint.js';
import { MAX_TRUNCATED_LISTED, truncationHeaders } from '../../embedder/src/http/result-headers.js';
import { testGrant, TEST_MODEL_ID, ensureTestModel, startTestEmbedder, type TestEmbedder } from '../support/embedder-app.js';

let embedder: TestEmbedder;
let modelDir: string;

beforeAll(async () => {
  modelDir = ensureTestModel();
  embedder = await startTestEmbedder(modelDir);
});
afterAll(async () => embedder?.close());

const embed = (fields: Record<string, unknown>, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
  embedder.app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    payload: { model: TEST_MODEL_ID, ...fields },
    headers: { ...testGrant(), ...headers },
  });
const vector = async (fields: Record<string, unknown>, headers: Record<string, string> = {}): Promise<number[]> => {
  const res = await embed(fields, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data[0].embedding;
};
const tokens = (n: number): string => Array.from({ length: n }, () => 'a').join(' ');

describe('dimensions', () => {
  it('null is not set: the same 200 as without it; any integer, 1024 included, stays invalid_request', async () => {
    expect(await vector({ input: 'heart attack', dimensions: null })).toEqual(await vector({ input: 'heart attack' }));
    for (const dimensions of [1024, 384, 0]) {
      const res = await embed({ input: 'x', dimensions });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_request', detail: expect.stringMatching(/^dimensions is not supported/) });
    }
  });
});

describe('x-input-type', () => {
  it("query in the header gives the body field's query vector; document gives the plain one", async () => {
    const [plain, query] = await Promise.all([vector({ input: 'chest pain' }), vector({ input: 'chest pain', input_type: 'query' })]);
    expect(query).not.toEqual(plain);
    expect(await vector({ input: 'chest pain' }, { 'x-input-type': 'query' })).toEqual(query);
    expect(await vector({ input: 'chest pain' }, { 'x-input-type': 'document' })).toEqual(plain);
  });

  it('the body field wins over the header', async () => {
    const plain = await vector({ input: 'chest pain' });
    expect(await vector({ input: 'chest pain', input_type: 'document' }, { 'x-input-type': 'query' })).toEqual(plain);
  });

  it('any other value, or the header sent twice, is invalid_body naming x-input-type', async () => {
    for (const value of ['Query', 'passage', '', 'query, query']) {
      const res = await embed({ input: 'x' }, { 'x-input-type': value });
      expect(res.statusCode, value).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'invalid_body',
        detail: 'x-input-type: must be one of query, document',
        error: { param: 'x-input-type' },
      });
    }
  });
});

describe('x-model-fingerprint', () => {
  it('every 200 carries the hash of the model directory the embedder loaded', async () => {
    const res = await embed({ input: 'x' });
    expect(res.headers['x-model-fingerprint']).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(res.headers['x-model-fingerprint']).toBe(await modelFingerprint(modelDir));
  });

  it('changes when any of the manifest, the tokenizer or the weights changes', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'ctg-fingerprint-'));
    try {
      for (const name of ['manifest.json', 'tokenizer.json', 'model.onnx']) cpSync(join(modelDir, name), join(copy, name));
      const seen = new Set([await modelFingerprint(copy)]);
      expect(seen).toEqual(new Set([await modelFingerprint(modelDir)]));
      for (const name of ['manifest.json', 'tokenizer.json', 'model.onnx']) {
        const path = join(copy, name);
        writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from(' ')]));
        seen.add(await modelFingerprint(copy));
      }
      expect(seen.size).toBe(4);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('x-truncated-inputs', () => {
  it('lists each input truncation cut with its token count before the cut; absent when none was', async () => {
    const cut = await embed({ input: ['heart attack', tokens(700), tokens(10)], truncate_prompt_tokens: -1 });
    expect(cut.headers['x-truncated-inputs']).toBe('1:702');
    expect(cut.json().usage.total_tokens).toBe(4 + 512 + 12);
    const kept = await embed({ input: [tokens(20), tokens(3)], truncate_prompt_tokens: 5 });
    expect(kept.headers['x-truncated-inputs']).toBe('0:22');
    expect((await embed({ input: tokens(600 - 2), truncate_prompt_tokens: -1 })).headers['x-truncated-inputs']).toBe('0:600');
    expect((await embed({ input: tokens(510), truncate_prompt_tokens: -1 })).headers['x-truncated-inputs']).toBeUndefined();
  });

  it('is bounded: 64 pairs, then the number of further cut inputs', () => {
    const many = Array.from({ length: 70 }, (_, index) => ({ index, tokens: 600 }));
    const header = truncationHeaders(many)['x-truncated-inputs']!;
    expect(header.split(',')).toHaveLength(MAX_TRUNCATED_LISTED + 1);
    expect(header.endsWith(',63:600,+6')).toBe(true);
    expect(truncationHeaders([])).toEqual({});
  });
});
