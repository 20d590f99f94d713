/**
 * Who may call the admin API, decided before any handler runs: a bearer admin token or a live
 * session cookie authenticates; a state-changing request on a session must also carry the
 * session's CSRF token and come from this origin. Refusals are thrown as AdminHttpError.
 */
import type { FastifyRequest } from 'fastify';
import type { Who } from '../deps.js';
import { AdminHttpError } from './problems.js';
import { readCookie, sameSecret, SESSION_COOKIE, tokenMatches, type Session, type Sessions } from './sessions.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const ACTOR_NAME = /^[\w.@+ -]{1,100}$/;

export interface GuardOptions {
  readonly token: string;
  readonly sessions: Sessions;
  readonly actorHeader: string | null;
}

/** The authenticated caller: who they are and the session, when they came with one. */
export interface Caller {
  readonly who: Who;
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

/** The SSO proxy's user when configured and present, else `fallback`. */
export function actorOf(request: FastifyRequest, actorHeader: string | null, fallback: string): string {
  const user = actorHeader === null ? undefined : request.headers[actorHeader];
  if (typeof user === 'string' && ACTOR_NAME.test(user)) return `sso:${user}`;
  return fallback;
}

/** Authenticates `request` (and checks CSRF for a session's state-changing request). */
export function authenticate(request: FastifyRequest, options: GuardOptions): Caller {
  const from = request.ip;
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer[ \t]+(\S+)\s*$/i.exec(authorization);
    if (!match || !tokenMatches(match[1]!, options.token)) throw new AdminHttpError('admin_unauthorized', 'authorization: not a valid admin token');
    if (!sameOrigin(request)) throw new AdminHttpError('csrf_rejected', 'origin: requests must come from the console\'s own origin');
    return { who: { actor: actorOf(request, options.actorHeader, 'token'), from }, session: null };
  }
  const session = options.sessions.find(readCookie(request.headers.cookie, SESSION_COOKIE));
  if (!session) throw new AdminHttpError('admin_unauthorized', 'sign in with the admin token (POST /api/session) or send Authorization: Bearer <admin token>');
  if (!SAFE_METHODS.has(request.method)) {
    const csrf = request.headers['x-csrf-token'];
    if (typeof csrf !== 'string' || !sameSecret(csrf, session.csrfToken)) throw new AdminHttpError('csrf_rejected', 'x-csrf-token: missing or not this session\'s token');
    if (!sameOrigin(request)) throw new AdminHttpError('csrf_rejected', 'origin: requests must come from the console\'s own origin');
  }
  return { who: { actor: session.actor, from }, session };
}
