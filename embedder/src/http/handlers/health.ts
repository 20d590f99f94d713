/** GET /health (liveness) and the internal GET /ready (model loaded); neither touches the model. */
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE, ProblemError } from '../../../../openapi/problems.js';
import type { components } from '../../../../openapi/generated/schema.js';
import type { EmbeddingEngine } from '../../core/engine.js';
import type { SettlementStore } from '../../settlement/store.js';

/** `getHealth`: answers at once, whatever the model's state (the spec: liveness only). */
export const getHealth: RouteHandlerMethod = async (_request: FastifyRequest, reply: FastifyReply) => {
  const body: components['schemas']['Health'] = { status: 'ok' };
  return reply.type(JSON_CONTENT_TYPE).send(body);
};

/**
 * Internal readiness (not routed by Envoy): 200 once the model is loaded and the settlement
 * store answers (no request can be served without it), else 503; 503 too while draining, so
 * load balancers stop sending new work.
 */
export function readyHandler(
  engine: EmbeddingEngine,
  settlement: Pick<SettlementStore, 'isReady'>,
  retryAfterSeconds: number,
  draining: () => boolean = () => false,
): RouteHandlerMethod {
  return async (_request, reply) => {
    const wait = { 'retry-after': String(retryAfterSeconds) };
    if (draining()) throw new ProblemError('model_not_ready', 'The embedder is shutting down.', wait);
    if (!engine.isReady()) {
      throw new ProblemError('model_not_ready', 'The model is still loading.', wait);
    }
    if (!settlement.isReady()) {
      throw new ProblemError('authorization_unavailable', 'The settlement store (Redis) is not reachable, or lacks its functions.', wait);
    }
    return reply.type(JSON_CONTENT_TYPE).send({ status: 'ready', model: engine.modelId });
  };
}
