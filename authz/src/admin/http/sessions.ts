/**
 * Console sessions and the admin token, pure apart from the injected clock. The token is
 * compared in constant time (both sides hashed first, so lengths leak nothing). A session is a
 * random id in an HttpOnly, SameSite=Strict cookie plus a CSRF token the page sends back in a
 * header; sessions live in memory (a restart signs everyone out), bounded in number and age.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'ctg_admin';
const MAX_SESSIONS = 1000;

export interface Session {
  readonly id: string;
  readonly actor: string;
  readonly csrfToken: string;
  expiresAt: number;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** True when `presented` is the admin token (constant time). */
export function tokenMatches(presented: string, token: string): boolean {
  return timingSafeEqual(digest(presented), digest(token));
}

/** Constant-time string equality for CSRF tokens. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export class Sessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** Opens a session for `actor`; the oldest one goes when the table is full. */
  open(actor: string): Session {
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const session: Session = { id: randomBytes(32).toString('base64url'), actor, csrfToken: randomBytes(32).toString('base64url'), expiresAt: this.now() + this.ttlMs };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id (its lifetime renewed), or null. */
  find(id: string | undefined): Session | null {
    const session = id === undefined ? undefined : this.sessions.get(id);
    if (!session) return null;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(session.id);
      return null;
    }
    session.expiresAt = this.now() + this.ttlMs;
    return session;
  }

  /** Ends a session. */
  close(id: string): void {
    this.sessions.delete(id);
  }

  /** The Set-Cookie value for a session (or for clearing it when `session` is null). */
  cookie(session: Session | null): string {
    const value = session ? session.id : '';
    const maxAge = session ? Math.floor(this.ttlMs / 1000) : 0;
    return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}`;
  }
}

/** The value of cookie `name` in a Cookie header, if any. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
