import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { openapiDocument } from '../../openapi/document.js';
import { documentedOperations, registerOperations } from '../../embedder/src/http/openapi-routes.js';
import { inlineRefs } from '../../openapi/refs.js';

describe('routes from the OpenAPI document', () => {
  it('reads every operation with its method, url and request schemas', () => {
    const ops = documentedOperations();
    expect(ops.map((op) => `${op.method} ${op.url} ${op.operationId}`).sort()).toEqual([
      'DELETE /v1/files/:file_id deleteFile',
      'GET /health getHealth',
      'GET /v1/batches listBatches',
      'GET /v1/batches/:batch_id retrieveBatch',
      'GET /v1/files listFiles',
      'GET /v1/files/:file_id retrieveFile',
      'GET /v1/files/:file_id/content downloadFile',
      'GET /v1/models listModels',
      'GET /v1/models/:model retrieveModel',
      'POST /v1/batches createBatch',
      'POST /v1/batches/:batch_id/cancel cancelBatch',
      'POST /v1/embeddings createEmbeddings',
      'POST /v1/files createFile',
    ]);
    // What the API key secures (the document's security) is what the embedder serves only with a grant.
    expect(
      ops
        .filter((op) => op.secured)
        .map((op) => op.operationId)
        .sort(),
    ).toEqual([
      'cancelBatch',
      'createBatch',
      'createEmbeddings',
      'createFile',
      'deleteFile',
      'downloadFile',
      'listBatches',
      'listFiles',
      'listModels',
      'retrieveBatch',
      'retrieveFile',
      'retrieveModel',
    ]);
    // The upload's body is multipart, streamed by its handler: no JSON schema, no JSON content-type rule.
    expect(ops.find((op) => op.operationId === 'createFile')!.jsonBody).toBe(false);
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
    expect(() => registerOperations(Fastify(), { getHealth: handler })).toThrow(/missing \[createEmbeddings, /);
    const all = Object.fromEntries(documentedOperations().map((op) => [op.operationId, handler]));
    expect(() => registerOperations(Fastify(), { ...all, extra: handler })).toThrow(/missing \[\], unknown \[extra\]/);
  });
});
