/**
 * Who may call the admin API, decided before any handler runs: an administrator's bearer token
 * or a live session cookie authenticates; the administrator's current role must include the
 * operation's `x-required-role`; a state-changing request must come from this origin and, when
 * its credential is the (ambient) cookie, carry the session's CSRF token. Refusals are
 * AdminHttpErrors, and each refused credential, role or CSRF check is recorded (refusals.ts): a
 * valid credential is never refused for what others did from the same address.
 */
import type { FastifyRequest } from 'fastify';
import type { Identity } from '../operations/administrators.js';
import { actorOf, roleAllows, tokenIdOf } from '../operations/administrators.js';
import type { Who } from '../operations/deps.js';
import type { Operations } from '../operations/operations.js';
import type { Role } from '../operations/rules.js';
import { AdminHttpError } from './problems.js';
import type { RefusalLog } from './refusals.js';
import { readCookie, sameSecret, SESSION_COOKIE, type Session, type Sessions } from './sessions.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface GuardDeps {
  readonly ops: Pick<Operations, 'authenticateToken' | 'identity' | 'tokenOwner'>;
  readonly sessions: Sessions;
  readonly refusals: RefusalLog;
}

/** The authenticated caller: who they are, their role, and the session when they came with one. */
export interface Caller {
  readonly who: Who;
  readonly admin: Identity;
  readonly session: Session | null;
}

/**
 * A browser's request must come from this listener's own origin. Sec-Fetch-Site is what every
 * current browser sends; Origin (compared with the Host the request was sent to) covers older
 * ones. A client that sends neither is not a browser, so it cannot be a cross-site forgery.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.headers.host ?? ''}`;
}

/** The token in `Authorization: Bearer <token>`, or null when the header is not that shape. */
export function bearerToken(authorization: string | undefined): string | null {
  const match = /^Bearer[ \t]+(\S{1,512})\s*$/i.exec(authorization ?? '');
  return match ? match[1]! : null;
}

/** 429 for a subject past the refusal limit. */
function tooManyAttempts(retryAfterS: number): AdminHttpError {
  return new AdminHttpError(
    'too_many_sign_in_attempts',
    `too many refused sign-ins from this address or for this token; a valid token still works; try again in ${retryAfterS} s`,
    { 'retry-after': String(retryAfterS) },
  );
}

/**
 * Checks `token`: the administrator holding it, whatever was refused before from this address.
 * A refused token is counted and audited with the token id tried (never its secret) and
 * answered 401, or 429 past the limit.
 */
export async function tokenIdentity(request: FastifyRequest, token: string | null, deps: GuardDeps): Promise<Identity> {
  const admin = token === null ? null : await deps.ops.authenticateToken(token);
  if (admin) return admin;
  const tried = tokenIdOf(token);
  const owner = tried === null ? null : await deps.ops.tokenOwner(tried);
  const { throttled, retryAfterS } = await deps.refusals.refuse(
    [`address:${request.ip}`, ...(tried === null ? [] : [`token:${tried}`])],
    {
      actor: 'anonymous',
      from: request.ip,
      action: 'session.fail',
      target: owner !== null ? `admin:${owner}` : tried !== null ? `admin-token:${tried}` : 'session',
      detail: { reason: token === null ? 'malformed_authorization' : 'unknown_token', ...(tried === null ? {} : { tokenId: tried }) },
    },
    'session.throttled',
  );
  if (throttled) throw tooManyAttempts(retryAfterS);
  throw new AdminHttpError('admin_unauthorized', 'not a valid administrator token');
}

/** Refuses (and records, per address) a sign-in sent from another origin. */
export async function refuseCrossSiteSignIn(request: FastifyRequest, operationId: string, deps: GuardDeps): Promise<never> {
  await deps.refusals.refuse([`address:${request.ip}`], {
    actor: 'anonymous',
    from: request.ip,
    action: 'access.csrf_rejected',
    target: `api:${operationId}`,
    detail: { method: request.method, reason: 'origin' },
  });
  throw new AdminHttpError('csrf_rejected', "origin: sign in from the console's own origin");
}

/** Authenticates `request` for operation `operationId`, which needs `role`; see the module comment. */
export async function authenticate(request: FastifyRequest, operationId: string, role: Role, deps: GuardDeps): Promise<Caller> {
  const authorization = request.headers.authorization;
  let session: Session | null = null;
  let admin: Identity | null;
  if (authorization !== undefined) {
    admin = await tokenIdentity(request, bearerToken(authorization), deps);
  } else {
    session = await deps.sessions.find(readCookie(request.headers.cookie, SESSION_COOKIE));
    admin = session && (await deps.ops.identity(session.admin));
    if (!admin)
      throw new AdminHttpError(
        'admin_unauthorized',
        'sign in (POST /api/session with your administrator token, or through single sign-on) or send Authorization: Bearer <administrator token>',
      );
  }
  const actor = actorOf(admin.name);
  const refuse = async (action: string, detail: Record<string, string>, error: AdminHttpError): Promise<never> => {
    await deps.refusals.refuse([`actor:${admin.name}`], {
      actor,
      from: request.ip,
      action,
      target: `api:${operationId}`,
      detail: { method: request.method, ...detail },
    });
    throw error;
  };
  if (!SAFE_METHODS.has(request.method)) {
    if (!sameOrigin(request))
      await refuse(
        'access.csrf_rejected',
        { reason: 'origin' },
        new AdminHttpError('csrf_rejected', "origin: requests must come from the console's own origin"),
      );
    const csrf = request.headers['x-csrf-token'];
    if (session && (typeof csrf !== 'string' || !sameSecret(csrf, session.csrfToken)))
      await refuse(
        'access.csrf_rejected',
        { reason: 'csrf_token' },
        new AdminHttpError('csrf_rejected', "x-csrf-token: missing or not this session's token"),
      );
  }
  if (!roleAllows(admin.role, role))
    await refuse(
      'access.forbidden',
      { needed: role, role: admin.role },
      new AdminHttpError(
        'admin_forbidden',
        `this needs the ${role} role; ${admin.name} is ${admin.role === 'viewer' ? 'a viewer' : `an ${admin.role}`}`,
      ),
    );
  return { who: { actor, from: request.ip }, admin, session };
}
