/**
 * The admin listener's probes (outside /api, no credentials: they say nothing but up or not):
 * GET /health answers while the process serves HTTP (the kubelet's liveness: a Redis outage
 * must not restart it, it reconnects by itself); GET /ready only while Redis answers a read (the
 * readiness: without Redis every console page and API call would fail with 503 anyway), else
 * 503 store_unavailable with retry-after. Logged at warn at most, so a probe every few seconds
 * does not fill the log.
 */
import type { FastifyInstance, LogLevel } from 'fastify';
import type { AdminDeps } from '../operations/deps.js';

const CHATTY: ReadonlySet<string> = new Set(['trace', 'debug', 'info']);

/** Registers GET /health and GET /ready on `app`; `/ready` reads the administrators' count from Redis. */
export function registerProbes(app: FastifyInstance, admins: Pick<AdminDeps['admins'], 'count'>): void {
  const logLevel = (CHATTY.has(app.log.level) ? 'warn' : app.log.level) as LogLevel;
  app.get('/health', { logLevel }, async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' }));
  app.get('/ready', { logLevel }, async (_request, reply) => {
    // A Redis that does not answer throws StoreUnavailableError: the error handler's 503.
    await admins.count();
    return reply.header('cache-control', 'no-store').send({ status: 'ready' });
  });
}
