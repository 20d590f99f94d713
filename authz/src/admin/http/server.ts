/**
 * `buildAdminServer(deps)`: the admin listener's Fastify app, unstarted. The console page at
 * `/`, the admin API under `/api` routed from openapi/admin.yaml, problem bodies for every
 * error (404 and 405 included). Only server-main.ts listens.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { adminDocument } from '../../../../openapi/admin-document.js';
import type { CoreConfig } from '../deps.js';
import type { Operations } from '../operations.js';
import { authenticate } from './guard.js';
import { adminHandlers } from './handlers.js';
import { AdminHttpError, handleAdminError, sendAdminProblem } from './problems.js';
import { registerAdminRoutes } from './routes.js';
import { Sessions } from './sessions.js';
import { registerConsole } from './static.js';

/** Admin bodies are a few hundred bytes; 64 KiB bounds what anyone can make us parse. */
const BODY_LIMIT_BYTES = 65_536;

export interface AdminServerDeps {
  readonly ops: Operations;
  readonly config: CoreConfig;
  readonly token: string;
  readonly actorHeader: string | null;
  readonly sessionTtlMs: number;
  readonly now: () => number;
  readonly logLevel?: string;
}

/** Builds the admin app (call `listen` or `inject` on it). */
export function buildAdminServer(deps: AdminServerDeps): FastifyInstance {
  const app = Fastify({
    logger: { level: deps.logLevel ?? 'info' },
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    // Unknown body fields are refused (as the CLI refuses unknown flags), not silently dropped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
  });
  const sessions = new Sessions(deps.sessionTtlMs, deps.now);
  const guard = { token: deps.token, sessions, actorHeader: deps.actorHeader };
  app.setErrorHandler(handleAdminError);
  app.setNotFoundHandler((request, reply) => sendAdminProblem(reply, new AdminHttpError('not_found', `no route for ${request.method} ${request.url.split('?', 1)[0]}`)));
  app.addHook('onSend', async (request, reply) => {
    if (request.url.startsWith('/api/')) reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
  });
  registerConsole(app);
  registerAdminRoutes(app, adminDocument, adminHandlers({ ops: deps.ops, config: deps.config, sessions, token: deps.token, actorHeader: deps.actorHeader }), (request) => authenticate(request, guard));
  return app;
}
