import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { openapiDocument } from '../../openapi/document.js';
import { documentedOperations, registerOperations } from '../../embedder/src/http/openapi-routes.js';
import { inlineRefs } from '../../openapi/refs.js';

describe('routes from the OpenAPI document', () => {
  it('reads every operation with its method, url and request schemas', () => {
    const ops = documentedOperations();
    expect(ops.map((op) => `${op.method} ${op.url} ${op.operationId}`).sort()).toEqual([
      'GET /health getHealth',
      'GET /v1/models listModels',
      'GET /v1/models/:model retrieveModel',
      'POST /v1/embeddings createEmbeddings',
    ]);
    // What the API key secures (the document's security) is what the embedder serves only with a grant.
    expect(
      ops
        .filter((op) => op.secured)
        .map((op) => op.operationId)
        .sort(),
    ).toEqual(['createEmbeddings', 'listModels', 'retrieveModel']);
    const create = ops.find((op) => op.operationId === 'createEmbeddings')!;
    expect(create.jsonBody).toBe(true);
    expect(create.schema.body).toEqual(openapiDocument.components.schemas.EmbeddingRequest);
    expect((create.schema.headers as { properties: object }).properties).toHaveProperty('x-request-id');
  });

  it('inlines $refs and refuses dangling ones', () => {
    const doc = { components: { schemas: { A: { type: 'string' }, B: { type: 'array', items: { $ref: '#/components/schemas/A' } } } } };
    expect(inlineRefs({ $ref: '#/components/schemas/B' }, doc)).toEqual({ type: 'array', items: { type: 'string' } });
    expect(() => inlineRefs({ $ref: '#/components/schemas/C' }, doc)).toThrow(/dangling/);
    expect(() => inlineRefs({ $ref: 'other.yaml#/x' }, doc)).toThrow(/unsupported/);
  });

  it('refuses a handler set that does not match the operationIds', () => {
    const handler = async () => ({});
    expect(() => registerOperations(Fastify(), { getHealth: handler })).toThrow(/missing \[createEmbeddings, listModels, retrieveModel\]/);
    const all = { getHealth: handler, createEmbeddings: handler, listModels: handler, retrieveModel: handler };
    expect(() => registerOperations(Fastify(), { ...all, extra: handler })).toThrow(/unknown \[extra\]/);
  });
});
