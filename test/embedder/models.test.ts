/**
 * GET /v1/models and GET /v1/models/{model} through inject() with the generated test model:
 * OpenAI's shapes, exactly the models authz granted this request, the grant required as for
 * embeddings, and the spec's 403 / 405 problems.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../openapi/problems.js';
import { grantHeader } from '../support/settlement.js';
import { ensureTestModel, startTestEmbedder, testGrant, TEST_MODEL_ID, type TestEmbedder } from '../support/embedder-app.js';

let embedder: TestEmbedder;
let installed: number;

beforeAll(async () => {
  const dir = ensureTestModel();
  installed = Math.floor(statSync(join(dir, 'model.onnx')).mtimeMs / 1000);
  embedder = await startTestEmbedder(dir);
});
afterAll(async () => embedder?.close());

const get = (url: string, headers: Record<string, string> = testGrant()) => embedder.app.inject({ method: 'GET', url, headers });

function expectProblem(res: LightMyRequestResponse, code: string): Record<string, unknown> {
  const entry = catalogue.get(code as never)!;
  expect(res.statusCode).toBe(entry.status);
  expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  return res.json();
}

describe('GET /v1/models', () => {
  it('lists the granted model in OpenAI shape', async () => {
    const res = await get('/v1/models');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({
      object: 'list',
      data: [{ id: TEST_MODEL_ID, object: 'model', created: installed, owned_by: 'clinical-embedding-gateway' }],
    });
  });

  it('lists nothing for an organization without the model (the grant names none)', async () => {
    const res = await get('/v1/models', testGrant({ model: '' }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ object: 'list', data: [] });
  });

  it('needs the grant: none, or a forged one, is 401 before anything is listed', async () => {
    expectProblem(await get('/v1/models', {}), 'invalid_api_key');
    expectProblem(
      await get('/v1/models', { ...grantHeader({ model: TEST_MODEL_ID }, 'another-secret-of-at-least-32-characters') }),
      'invalid_api_key',
    );
    expectProblem(await get(`/v1/models/${TEST_MODEL_ID}`, { 'x-gateway-model': TEST_MODEL_ID }), 'invalid_api_key');
  });

  it('other methods are 405 with allow: GET', async () => {
    for (const url of ['/v1/models', `/v1/models/${TEST_MODEL_ID}`]) {
      for (const method of ['POST', 'DELETE', 'HEAD'] as const) {
        const res = await embedder.app.inject({ method, url, headers: testGrant() });
        expect(res.statusCode, `${method} ${url}`).toBe(405);
        expect(res.headers.allow).toBe('GET');
      }
    }
  });
});

describe('GET /v1/models/{model}', () => {
  it('is the model object for the granted model', async () => {
    const res = await get(`/v1/models/${TEST_MODEL_ID}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: TEST_MODEL_ID, object: 'model', created: installed, owned_by: 'clinical-embedding-gateway' });
  });

  it('a model not granted and one that does not exist are the same 403 model_not_enabled, never echoing the id', async () => {
    const notGranted = expectProblem(await get(`/v1/models/${TEST_MODEL_ID}`, testGrant({ model: '' })), 'model_not_enabled');
    const unknown = expectProblem(await get('/v1/models/canary-model-XYZZY'), 'model_not_enabled');
    expect(unknown.detail).toBe(notGranted.detail);
    expect(JSON.stringify(unknown)).not.toContain('XYZZY');
  });
});
