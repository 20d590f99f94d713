/** GET /health (liveness) and the internal GET /ready (model loaded); neither touches the model. */
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE } from '../../../openapi/problems.js';
import type { components } from '../../../openapi/generated/schema.js';
import { ProblemError } from '../errors.js';
import type { EmbeddingEngine } from '../engine.js';

/** `getHealth`: answers at once, whatever the model's state (the spec: liveness only). */
export const getHealth: RouteHandlerMethod = async (_request: FastifyRequest, reply: FastifyReply) => {
  const body: components['schemas']['Health'] = { status: 'ok' };
  return reply.type(JSON_CONTENT_TYPE).send(body);
};

/**
 * Internal readiness (not routed by Envoy): 200 once the model is loaded, else 503
 * model_not_ready; 503 too while draining, so load balancers stop sending new work.
 */
export function readyHandler(engine: EmbeddingEngine, retryAfterSeconds: number, draining: () => boolean = () => false): RouteHandlerMethod {
  return async (_request, reply) => {
    const wait = { 'retry-after': String(retryAfterSeconds) };
    if (draining()) throw new ProblemError('model_not_ready', 'The embedder is shutting down.', wait);
    if (!engine.isReady()) {
      throw new ProblemError('model_not_ready', 'The model is still loading.', wait);
    }
    return reply.type(JSON_CONTENT_TYPE).send({ status: 'ready', model: engine.modelId });
  };
}
