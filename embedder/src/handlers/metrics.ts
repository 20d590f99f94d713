/** The internal GET /metrics (not routed by Envoy): the Prometheus text exposition. */
import type { RouteHandlerMethod } from 'fastify';
import type { EmbedderMetrics } from '../metrics.js';

/** Answers every metric of this app's registry, in the registry's content type. */
export function metricsHandler(metrics: EmbedderMetrics): RouteHandlerMethod {
  return async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render());
}
