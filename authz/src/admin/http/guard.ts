/**
 * Who may call the admin API, decided before any handler runs: a bearer admin token or a live
 * session cookie authenticates; a state-changing request must come from this origin and, when
 * its credential is ambient, carry the session's CSRF token. Refusals are AdminHttpErrors.
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

/** The session's CSRF token must come back in `x-csrf-token` on a state-changing request. */
function checkCsrf(request: FastifyRequest, session: Session | null): void {
  if (SAFE_METHODS.has(request.method)) return;
  const csrf = request.headers['x-csrf-token'];
  if (!session || typeof csrf !== 'string' || !sameSecret(csrf, session.csrfToken)) throw new AdminHttpError('csrf_rejected', 'x-csrf-token: missing or not this session\'s token');
}

/** True when `authorization` is `Bearer <the admin token>`. */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer[ \t]+(\S+)\s*$/i.exec(authorization ?? '');
  return match !== null && tokenMatches(match[1]!, token);
}

/**
 * Authenticates `request`, and for a state-changing one checks its origin and, where the
 * credential is ambient, its CSRF token. A session cookie is ambient; so is a bearer token an
 * SSO proxy adds for a signed-in browser (the request carries the proxy's user header): both
 * need the session's CSRF token. A script's own bearer token is not ambient.
 */
export function authenticate(request: FastifyRequest, options: GuardOptions): Caller {
  const from = request.ip;
  const session = options.sessions.find(readCookie(request.headers.cookie, SESSION_COOKIE));
  const authorization = request.headers.authorization;
  if (authorization !== undefined && !bearerMatches(authorization, options.token)) throw new AdminHttpError('admin_unauthorized', 'authorization: not a valid admin token');
  if (authorization === undefined && !session) throw new AdminHttpError('admin_unauthorized', 'sign in with the admin token (POST /api/session) or send Authorization: Bearer <admin token>');
  if (!SAFE_METHODS.has(request.method) && !sameOrigin(request)) throw new AdminHttpError('csrf_rejected', 'origin: requests must come from the console\'s own origin');
  const viaProxy = options.actorHeader !== null && request.headers[options.actorHeader] !== undefined;
  if (authorization === undefined || viaProxy) checkCsrf(request, session);
  const actor = session?.actor ?? actorOf(request, options.actorHeader, 'token');
  return { who: { actor, from }, session };
}
