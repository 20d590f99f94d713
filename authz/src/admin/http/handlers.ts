/**
 * The admin API's handlers by operationId: each translates the validated request into a call
 * of the admin core (the same operation the CLI calls) and the result into the response.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CoreConfig } from '../deps.js';
import type { Operations } from '../operations.js';
import { actorOf, bearerMatches, sameOrigin, type Caller } from './guard.js';
import { AdminHttpError } from './problems.js';
import type { AdminHandler } from './routes.js';
import { SESSION_COOKIE, readCookie, tokenMatches, type Sessions } from './sessions.js';

export interface HandlerDeps {
  readonly ops: Operations;
  readonly config: CoreConfig;
  readonly sessions: Sessions;
  readonly token: string;
  readonly actorHeader: string | null;
}

type Params = Record<string, string>;
type Query = Record<string, unknown>;
type Body = Record<string, unknown>;

const params = (request: FastifyRequest): Params => request.params as Params;
const query = (request: FastifyRequest): Query => request.query as Query;
const body = (request: FastifyRequest): Body => (request.body ?? {}) as Body;

const EXPORT_TYPES = { csv: 'text/csv; charset=utf-8', jsonl: 'application/x-ndjson; charset=utf-8' } as const;

/** Every operation of openapi/admin.yaml. */
export function adminHandlers(deps: HandlerDeps): Readonly<Record<string, AdminHandler<Caller>>> {
  const { ops } = deps;
  const sessionView = (actor: string, csrfToken: string) => ({
    actor, csrfToken, modelId: deps.config.modelId, defaults: { rpm: deps.config.defaultRpm, tpm: deps.config.defaultTpm },
  });
  const created = <T>(reply: FastifyReply, value: T): T => {
    reply.code(201);
    return value;
  };

  return {
    getSession: async (_request, reply, caller) => {
      if (!caller.session) throw new AdminHttpError('admin_unauthorized', 'no console session: bearer clients need none');
      reply.header('cache-control', 'no-store');
      return sessionView(caller.session.actor, caller.session.csrfToken);
    },
    createSession: async (request, reply) => {
      if (!sameOrigin(request)) throw new AdminHttpError('csrf_rejected', 'origin: sign in from the console\'s own origin');
      const { token, name } = body(request) as { token?: string; name?: string };
      // The token typed in, or the bearer token an SSO proxy adds for its signed-in user.
      const valid = token === undefined ? bearerMatches(request.headers.authorization, deps.token) : tokenMatches(token, deps.token);
      if (!valid) throw new AdminHttpError('admin_unauthorized', 'token: not the admin token');
      const label = (name ?? '').replace(/[^\w.@+ -]/g, '').trim().slice(0, 64) || 'admin';
      const session = deps.sessions.open(actorOf(request, deps.actorHeader, `token:${label}`));
      await ops.recordSignIn({ actor: session.actor, from: request.ip });
      reply.header('set-cookie', deps.sessions.cookie(session)).header('cache-control', 'no-store');
      return sessionView(session.actor, session.csrfToken);
    },
    deleteSession: async (request, reply, caller) => {
      const id = readCookie(request.headers.cookie, SESSION_COOKIE);
      if (id !== undefined) deps.sessions.close(id);
      await ops.recordSignOut(caller.who);
      return reply.code(204).header('set-cookie', deps.sessions.cookie(null)).send();
    },
    listOrgs: async () => ({ orgs: await ops.listOrgs() }),
    createOrg: async (request, reply, caller) => created(reply, await ops.createOrg(body(request) as { id: unknown }, caller.who)),
    getOrg: async (request) => ops.showOrg(params(request).org),
    updateOrg: async (request, _reply, caller) => ops.updateOrg(params(request).org, body(request), caller.who),
    listKeys: async (request) => ops.listKeys(params(request).org),
    createKey: async (request, reply, caller) => created(reply, await ops.createKey({ ...body(request), org: params(request).org }, caller.who)),
    updateKey: async (request, _reply, caller) => ops.updateKey(params(request).key, body(request), caller.who),
    revokeKey: async (request, _reply, caller) => ops.revokeKey(params(request).key, caller.who),
    rotateKey: async (request, reply, caller) => created(reply, await ops.rotateKey(params(request).key, body(request).overlapSeconds, caller.who)),
    getUsage: async (request) => ops.usageSeries(params(request).org, query(request).days ?? 14),
    exportUsage: async (request, reply, caller) => {
      const q = query(request);
      const lines = await ops.openExport(q, caller.who);
      const format = q.format as keyof typeof EXPORT_TYPES;
      reply.type(EXPORT_TYPES[format]).header('content-disposition', `attachment; filename="usage.${format}"`);
      return reply.send(Readable.from(lines));
    },
    listAudit: async (request) => ops.auditRecent(query(request).limit ?? 50),
    verifyAudit: async () => ops.auditVerify(),
  };
}
