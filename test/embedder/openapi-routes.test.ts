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
      'POST /v1/embeddings createEmbeddings',
    ]);
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
    expect(() => registerOperations(Fastify(), { getHealth: handler })).toThrow(/missing \[createEmbeddings\]/);
    expect(() => registerOperations(Fastify(), { getHealth: handler, createEmbeddings: handler, extra: handler })).toThrow(
      /unknown \[extra\]/,
    );
  });
});
