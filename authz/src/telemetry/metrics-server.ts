/**
 * authz's internal metrics endpoint: GET /metrics in Prometheus's text format on its own
 * listener (AUTHZ_METRICS_HOST:AUTHZ_METRICS_PORT, loopback by default), separate from the gRPC
 * port Envoy talks to. Never routed by Envoy; nothing else is served.
 *
 * Every request must carry `Authorization: Bearer <METRICS_TOKEN>`, any accepted one (Prometheus's
 * `authorization.credentials_file`), checked before the path: a caller inside the network
 * without the token learns nothing, not even which paths exist. Metrics hold no request text,
 * but they show traffic, organizations' denial rates and Redis health, which is an operator's
 * business.
 */
import { createServer, type Server } from 'node:http';
import { bearerCheck } from '../../../contract/bearer.js';
import type { SecretValues } from '../../../contract/secrets.js';
import type { AuthzMetrics } from './metrics.js';

/**
 * An unstarted HTTP server answering GET /metrics to holders of an accepted `token` (two during
 * a rotation); 401 without it, 404 for any other path, 405 for other methods.
 */
export function createMetricsServer(metrics: AuthzMetrics, token: SecretValues): Server {
  const allowed = bearerCheck(token);
  return createServer((request, response) => {
    if (!allowed(request.headers.authorization)) {
      response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain; charset=utf-8' }).end('unauthorized\n');
      return;
    }
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    metrics.render().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
}

/** Listens on host:port (0 = any free port) and resolves with the bound port. */
export function listenMetrics(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}
