/**
 * The internal GET /metrics (not routed by Envoy): the Prometheus text exposition, to holders of
 * the metrics token only (`Authorization: Bearer <METRICS_TOKEN>`, what Prometheus sends from
 * its credentials file). Without a configured token nobody is answered: fail closed.
 */
import type { RouteHandlerMethod } from 'fastify';
import { bearerCheck } from '../../../../contract/bearer.js';
import type { SecretValues } from '../../../../contract/secrets.js';
import type { EmbedderMetrics } from '../../telemetry/metrics.js';

/** The handler for GET /metrics; 401 unless the caller sends `token`. */
export function metricsHandler(metrics: EmbedderMetrics, token: SecretValues | undefined): RouteHandlerMethod {
  const allowed = bearerCheck(token);
  return async (request, reply) => {
    if (!allowed(request.headers.authorization)) {
      return reply.code(401).header('www-authenticate', 'Bearer').type('text/plain; charset=utf-8').send('unauthorized\n');
    }
    return reply.type(metrics.contentType).send(await metrics.render());
  };
}
