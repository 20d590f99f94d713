/**
 * `buildAdminServer(deps)`: the admin listener's Fastify app, unstarted. The console page at
 * `/`, the admin API under `/api` routed from openapi/admin.yaml (each operation's role from its
 * `x-required-role`), problem bodies for every error (404 and 405 included), the probes
 * (`/health`, `/ready`) and `/metrics` beside it. The client address
 * comes from X-Forwarded-For only when the peer is a configured trusted proxy. Only
 * main.ts listens.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { adminDocument } from '../../../openapi/admin-document.js';
import type { CoreConfig } from '../operations/deps.js';
import type { AdminDeps } from '../operations/deps.js';
import type { OidcSettings } from '../config.js';
import type { Operations } from '../operations/operations.js';
import { authenticate, type GuardDeps } from './guard.js';
import { adminHandlers } from './handlers.js';
import { registerProbes } from './health.js';
import { registerAdminMetrics } from './metrics.js';
import { OidcSignIn } from './oidc.js';
import { AdminHttpError, handleAdminError, sendAdminProblem } from './problems.js';
import { registerAdminRoutes } from './routes.js';
import { Sessions } from './sessions.js';
import { registerConsole } from './static.js';
import { RefusalLog } from './refusals.js';
import type { Lifetimes } from '../store/sessions.js';
import type { SecretValues } from '../../../contract/secrets.js';

/** Admin bodies are a few hundred bytes; 64 KiB bounds what anyone can make us parse. */
const BODY_LIMIT_BYTES = 65_536;

export interface AdminServerDeps {
  readonly ops: Operations;
  readonly config: CoreConfig;
  /** Sessions and pending sign-ins; the administrators' count is what GET /ready reads. */
  readonly stores: Pick<AdminDeps, 'sessions' | 'admins'>;
  /** A console session's idle and absolute lifetimes (ADMIN_SESSION_TTL_S, ADMIN_SESSION_MAX_S). */
  readonly sessionLifetimes: Lifetimes;
  /** Addresses or CIDR ranges whose X-Forwarded-For is believed; [] believes none. */
  readonly trustedProxies: readonly string[];
  readonly oidc: OidcSettings | null;
  /** The console's public origin (ADMIN_PUBLIC_URL); with https: the session cookie is `Secure`. */
  readonly publicUrl?: string | null;
  readonly logLevel?: string;
  /** The bearer token GET /metrics requires (METRICS_TOKEN); without one, /metrics answers nobody. */
  readonly metricsToken?: SecretValues;
}

/** Builds the admin app (call `listen` or `inject` on it). */
export function buildAdminServer(deps: AdminServerDeps): FastifyInstance {
  const app = Fastify({
    logger: { level: deps.logLevel ?? 'info' },
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    trustProxy: deps.trustedProxies.length > 0 ? [...deps.trustedProxies] : false,
    // Unknown body fields are refused (as the CLI refuses unknown flags), not silently dropped.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
  });
  const secure = (deps.publicUrl ?? deps.oidc?.publicUrl ?? '').startsWith('https:');
  const guard: GuardDeps = {
    ops: deps.ops,
    sessions: new Sessions(deps.stores.sessions, deps.sessionLifetimes, secure, deps.ops.now),
    refusals: new RefusalLog(deps.stores.sessions, deps.ops),
  };
  const oidc = deps.oidc && new OidcSignIn(deps.oidc, deps.stores.sessions);
  app.setErrorHandler(handleAdminError);
  app.setNotFoundHandler((request, reply) =>
    sendAdminProblem(reply, new AdminHttpError('not_found', `no route for ${request.method} ${request.url.split('?', 1)[0]}`)),
  );
  app.addHook('onSend', async (request, reply) => {
    if (request.url.startsWith('/api/')) reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
  });
  registerConsole(app);
  registerProbes(app, deps.stores.admins);
  registerAdminMetrics(app, deps.ops, deps.metricsToken);
  registerAdminRoutes(app, adminDocument, adminHandlers({ ...guard, ops: deps.ops, config: deps.config, oidc }), (request, op) =>
    authenticate(request, op.operationId, op.role, guard),
  );
  return app;
}
