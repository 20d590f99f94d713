/**
 * Who may call the admin API, decided before any handler runs: an administrator's bearer token
 * or a live session cookie authenticates; the administrator's current role must include the
 * operation's `x-required-role`; a state-changing request must come from this origin and, when
 * its credential is the (ambient) cookie, carry the session's CSRF token. Refused tokens count
 * toward the sign-in throttle. Refusals are AdminHttpErrors.
 */
import type { FastifyRequest } from 'fastify';
import type { Identity } from '../operations/administrators.js';
import { actorOf, roleAllows } from '../operations/administrators.js';
import type { Who } from '../operations/deps.js';
import type { Operations } from '../operations/operations.js';
import type { Role } from '../operations/rules.js';
import { AdminHttpError } from './problems.js';
import { readCookie, sameSecret, SESSION_COOKIE, type Session, type Sessions } from './sessions.js';
import type { SignInThrottle } from './throttle.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface GuardDeps {
  readonly ops: Pick<Operations, 'authenticateToken' | 'identity'>;
  readonly sessions: Sessions;
  readonly throttle: SignInThrottle;
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

/** Checks `token`, counting and auditing a refusal; the administrator, or a 401. */
export async function tokenIdentity(request: FastifyRequest, token: string | null, deps: GuardDeps): Promise<Identity> {
  await deps.throttle.check(request.ip);
  const admin = token === null ? null : await deps.ops.authenticateToken(token);
  if (admin) return admin;
  await deps.throttle.fail(request.ip, token === null ? 'malformed_authorization' : 'unknown_token');
  throw new AdminHttpError('admin_unauthorized', 'not a valid administrator token');
}

/** Authenticates `request` for an operation that needs `role`; see the module comment. */
export async function authenticate(request: FastifyRequest, role: Role, deps: GuardDeps): Promise<Caller> {
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
  if (!SAFE_METHODS.has(request.method)) {
    if (!sameOrigin(request)) throw new AdminHttpError('csrf_rejected', "origin: requests must come from the console's own origin");
    const csrf = request.headers['x-csrf-token'];
    if (session && (typeof csrf !== 'string' || !sameSecret(csrf, session.csrfToken)))
      throw new AdminHttpError('csrf_rejected', "x-csrf-token: missing or not this session's token");
  }
  if (!roleAllows(admin.role, role))
    throw new AdminHttpError(
      'admin_forbidden',
      `this needs the ${role} role; ${admin.name} is ${admin.role === 'viewer' ? 'a viewer' : `an ${admin.role}`}`,
    );
  return { who: { actor: actorOf(admin.name), from: request.ip }, admin, session };
}
