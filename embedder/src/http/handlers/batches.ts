/** The Batches API handlers (OpenAI's shapes, endpoint `/v1/embeddings`): create, list, retrieve, cancel. */
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE } from '../../../../openapi/problems.js';
import { batchView, type Batches, type CreateBatchBody } from '../../batch/batches.js';
import { listQuery, orgOf, page } from './list-query.js';

const idOf = (request: FastifyRequest): string => (request.params as { batch_id: string }).batch_id;

/** The Batches API handlers by operationId. */
export function batchHandlers(batches: Batches): Record<string, RouteHandlerMethod> {
  return {
    async createBatch(request: FastifyRequest, reply: FastifyReply) {
      orgOf(request);
      const record = await batches.create(request.grant!, request.body as CreateBatchBody);
      return reply.type(JSON_CONTENT_TYPE).send(batchView(record));
    },
    async listBatches(request: FastifyRequest, reply: FastifyReply) {
      const listed = await batches.list(orgOf(request), listQuery(request, 100));
      return reply.type(JSON_CONTENT_TYPE).send(page(listed.batches.map(batchView), listed.hasMore));
    },
    async retrieveBatch(request: FastifyRequest, reply: FastifyReply) {
      return reply.type(JSON_CONTENT_TYPE).send(batchView(await batches.get(orgOf(request), idOf(request))));
    },
    async cancelBatch(request: FastifyRequest, reply: FastifyReply) {
      return reply.type(JSON_CONTENT_TYPE).send(batchView(await batches.cancel(orgOf(request), idOf(request))));
    },
  };
}
