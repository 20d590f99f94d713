/**
 * The admin API's handlers by operationId: each translates the validated request into a call
 * of the admin core (the same operation the CLI calls) and the result into the response.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actorOf } from '../operations/administrators.js';
import type { CoreConfig } from '../operations/deps.js';
import { exportFileName } from '../operations/export-names.js';
import type { Operations } from '../operations/operations.js';
import { bearerToken, refuseCrossSiteSignIn, sameOrigin, tokenIdentity, type Caller, type GuardDeps } from './guard.js';
import { OidcRefusal, PENDING_COOKIE, type OidcSignIn } from './oidc.js';
import { AdminHttpError } from './problems.js';
import type { AdminHandler } from './routes.js';
import { SESSION_COOKIE, readCookie, type Session } from './sessions.js';

export interface HandlerDeps extends GuardDeps {
  readonly ops: Operations;
  readonly config: CoreConfig;
  /** Null when OpenID Connect sign-in is not configured. */
  readonly oidc: OidcSignIn | null;
}

type Params = Record<string, string>;
type Query = Record<string, unknown>;
type Body = Record<string, unknown>;

const params = (request: FastifyRequest): Params => request.params as Params;
const query = (request: FastifyRequest): Query => request.query as Query;
const body = (request: FastifyRequest): Body => (request.body ?? {}) as Body;

const EXPORT_TYPES = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
  json: 'application/json; charset=utf-8',
} as const;

/** Every operation of openapi/admin.yaml. */
export function adminHandlers(deps: HandlerDeps): Readonly<Record<string, AdminHandler<Caller | null>>> {
  const { ops } = deps;
  const sessionView = async (session: Session) => {
    const admin = await ops.identity(session.admin);
    if (!admin) throw new AdminHttpError('admin_unauthorized', 'this administrator was disabled or removed');
    return {
      actor: actorOf(admin.name),
      admin: admin.name,
      role: admin.role,
      via: session.via,
      csrfToken: session.csrfToken,
      modelId: deps.config.modelId,
      defaults: { rpm: deps.config.defaultRpm, tpm: deps.config.defaultTpm },
    };
  };
  const created = <T>(reply: FastifyReply, value: T): T => {
    reply.code(201);
    return value;
  };
  const caller = (c: Caller | null): Caller => c!;

  return {
    getSession: async (_request, reply, c) => {
      if (!caller(c).session) throw new AdminHttpError('admin_unauthorized', 'no console session: bearer clients need none');
      reply.header('cache-control', 'no-store');
      return sessionView(caller(c).session!);
    },
    createSession: async (request, reply) => {
      if (!sameOrigin(request)) await refuseCrossSiteSignIn(request, 'createSession', deps);
      const { token } = body(request) as { token?: string };
      const admin = await tokenIdentity(request, token ?? bearerToken(request.headers.authorization), deps);
      const session = await deps.sessions.open(admin.name, 'token');
      await ops.recordSignIn({ actor: actorOf(admin.name), from: request.ip }, 'token');
      reply.header('set-cookie', deps.sessions.cookie(session)).header('cache-control', 'no-store');
      return sessionView(session);
    },
    deleteSession: async (request, reply, c) => {
      const id = readCookie(request.headers.cookie, SESSION_COOKIE);
      if (id !== undefined) await deps.sessions.close(id);
      await ops.recordSignOut(caller(c).who);
      return reply.code(204).header('set-cookie', deps.sessions.cookie(null)).send();
    },
    signInOptions: async () => ({ oidc: deps.oidc !== null }),
    // The browser navigates these two itself, so every outcome is a redirect to the console,
    // which explains a refusal in words (never a JSON page).
    startOidc: async (_request, reply) => {
      if (!deps.oidc) throw new AdminHttpError('not_found', 'single sign-on is not configured (OIDC_ISSUER)');
      const started = await deps.oidc.start().catch(() => null);
      if (!started)
        return reply.code(302).header('location', '/?sign_in_error=provider_unavailable').header('cache-control', 'no-store').send();
      return reply
        .code(302)
        .header('set-cookie', started.cookie)
        .header('location', started.location)
        .header('cache-control', 'no-store')
        .send();
    },
    finishOidc: async (request, reply) => {
      const oidc = deps.oidc;
      if (!oidc) throw new AdminHttpError('not_found', 'single sign-on is not configured (OIDC_ISSUER)');
      const back = (location: string, cookies: string[]) =>
        reply.code(302).header('set-cookie', cookies).header('location', location).header('cache-control', 'no-store').send();
      const clear = oidc.cookie(null);
      const refused = async (reason: string, identity: string | null) => {
        const { throttled } = await deps.refusals.refuse(
          [`address:${request.ip}`, ...(identity === null ? [] : [`identity:${identity}`])],
          {
            actor: 'anonymous',
            from: request.ip,
            action: 'session.fail',
            target: identity === null ? 'session' : `oidc:${identity}`,
            detail: { reason: `oidc_${reason}`, ...(identity === null ? {} : { identity }) },
          },
          'session.throttled',
        );
        return back(`/?sign_in_error=${throttled ? 'too_many_attempts' : reason}`, [clear]);
      };
      let email: string;
      try {
        email = await oidc.finish(request.url, readCookie(request.headers.cookie, PENDING_COOKIE));
      } catch (error) {
        if (!(error instanceof OidcRefusal)) throw error;
        return refused(error.reason, error.identity);
      }
      // A completed sign-in is never throttled: the provider vouched for this person.
      const admin = await ops.identity(email);
      if (!admin) return refused('not_an_administrator', email);
      const session = await deps.sessions.open(admin.name, 'oidc');
      await ops.recordSignIn({ actor: actorOf(admin.name), from: request.ip }, 'oidc');
      return back('/', [clear, deps.sessions.cookie(session)]);
    },
    listAdmins: async () => ops.listAdmins(),
    createAdmin: async (request, reply, c) => created(reply, await ops.createAdmin(body(request), caller(c).who)),
    updateAdmin: async (request, _reply, c) => ops.updateAdmin(params(request).name, body(request), caller(c).who),
    createAdminToken: async (request, reply, c) => created(reply, await ops.createAdminToken(params(request).name, caller(c).who)),
    revokeAdminToken: async (request, _reply, c) => ops.revokeAdminToken(params(request).name, params(request).id, caller(c).who),
    listBudgets: async () => ops.listBudgets(),
    getBudget: async (request) => ({ org: params(request).org, budget: await ops.budgetOf(params(request).org) }),
    setBudget: async (request, _reply, c) => ops.setBudget(params(request).org, body(request), caller(c).who),
    listOrgs: async () => ({ orgs: await ops.listOrgs() }),
    createOrg: async (request, reply, c) => created(reply, await ops.createOrg(body(request) as { id: unknown }, caller(c).who)),
    getOrg: async (request) => ops.showOrg(params(request).org),
    updateOrg: async (request, _reply, c) => ops.updateOrg(params(request).org, body(request), caller(c).who),
    listKeys: async (request) => ops.listKeys(params(request).org),
    createKey: async (request, reply, c) =>
      created(reply, await ops.createKey({ ...body(request), org: params(request).org }, caller(c).who)),
    updateKey: async (request, _reply, c) => ops.updateKey(params(request).key, body(request), caller(c).who),
    revokeKey: async (request, _reply, c) => ops.revokeKey(params(request).key, caller(c).who),
    rotateKey: async (request, reply, c) =>
      created(reply, await ops.rotateKey(params(request).key, body(request).overlapSeconds, caller(c).who)),
    getUsage: async (request) => ops.usageSeries(params(request).org, query(request)),
    getUsageAcrossOrgs: async (request) => ops.usageAcrossOrgs(query(request)),
    disableOrg: async (request, _reply, c) => ops.disableOrg(params(request).org, caller(c).who),
    enableOrg: async (request, _reply, c) => ops.enableOrg(params(request).org, caller(c).who),
    deleteOrg: async (request, _reply, c) => ops.deleteOrg(params(request).org, caller(c).who),
    exportUsage: async (request, reply, c) => {
      const q = query(request);
      const lines = await ops.openExport(q, caller(c).who);
      const format = q.format as keyof typeof EXPORT_TYPES;
      reply
        .type(EXPORT_TYPES[format])
        .header('content-disposition', `attachment; filename="${exportFileName('usage', q, format, ops.now())}"`);
      return reply.send(Readable.from(lines));
    },
    exportBilling: async (request, reply, c) => {
      const q = query(request);
      const body = await ops.openBillingExport(q, caller(c).who);
      const format = (q.format ?? 'csv') as keyof typeof EXPORT_TYPES;
      return reply
        .type(EXPORT_TYPES[format])
        .header('content-disposition', `attachment; filename="${exportFileName('billing', q, format, ops.now())}"`)
        .send(body);
    },
    listAudit: async (request) => ops.auditPage(query(request)),
    exportAudit: async (request, reply, c) => {
      const q = query(request);
      const lines = await ops.openAuditExport(q, caller(c).who);
      const format = q.format as keyof typeof EXPORT_TYPES;
      reply
        .type(EXPORT_TYPES[format])
        .header('content-disposition', `attachment; filename="${exportFileName('audit', q, format, ops.now())}"`);
      return reply.send(Readable.from(lines));
    },
    verifyAudit: async () => ops.auditVerify(),
    getAuditPublicKey: async () => ops.auditPublicKey(),
  };
}
