/**
 * Console sessions: a random id in an HttpOnly, SameSite=Strict cookie plus a CSRF token the
 * page sends back in a header. They live in Redis (store/sessions.ts), so a restart or a
 * second replica keeps everyone signed in; a session names the administrator, whose role and
 * enabled state are read on every request, so a demotion takes effect at once. A session ends
 * after its idle lifetime unused and, however much it is used, at its absolute lifetime.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Lifetimes, SessionStore, StoredSession } from '../store/sessions.js';

export const SESSION_COOKIE = 'ctg_admin';

export interface Session extends StoredSession {
  readonly id: string;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Constant-time string equality for CSRF tokens. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export class Sessions {
  constructor(
    private readonly store: SessionStore,
    private readonly lifetimes: Lifetimes,
    /** Adds `Secure` to the cookie (the console is served over HTTPS). */
    private readonly secure: boolean,
    private readonly now: () => number,
  ) {}

  /** Opens a session for administrator `admin`. */
  async open(admin: string, via: 'token' | 'oidc'): Promise<Session> {
    const id = randomBytes(32).toString('base64url');
    const session: Session = { id, admin, csrfToken: randomBytes(32).toString('base64url'), via, openedAt: this.now() };
    await this.store.open(session.id, session, this.lifetimes);
    return session;
  }

  /** The live session with this id (its idle lifetime renewed, never past its absolute end), or null. */
  async find(id: string | undefined): Promise<Session | null> {
    if (id === undefined || !/^[\w-]{43}$/.test(id)) return null;
    const stored = await this.store.find(id, this.lifetimes, this.now());
    return stored && { ...stored, id };
  }

  /** Ends a session. */
  async close(id: string): Promise<void> {
    await this.store.close(id);
  }

  /** The Set-Cookie value for a session (or for clearing it when `session` is null): it lives as long as the session may. */
  cookie(session: Session | null): string {
    const value = session ? session.id : '';
    const maxAge = session ? Math.floor(this.lifetimes.maxMs / 1000) : 0;
    return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${this.secure ? '; Secure' : ''}`;
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
