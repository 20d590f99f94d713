/**
 * Console sessions and the refusal counters in Redis, so a restart or a second replica keeps
 * everyone signed in. A session is stored under the SHA-256 of its id (a Redis reader learns no
 * usable cookie), with the administrator's name, the CSRF token and when it was opened; it
 * expires on its own after the idle lifetime (renewed on use) and is refused, and deleted, once
 * its absolute lifetime has passed. Refusals (failed sign-ins, forbidden requests) are counted
 * per subject (an address, a token id, an administrator) in fixed windows.
 */
import { createHash } from 'node:crypto';
import type { RedisConnection } from '../../../contract/redis-connection.js';

export interface StoredSession {
  readonly admin: string;
  readonly csrfToken: string;
  /** How the administrator authenticated: `token` or `oidc`. */
  readonly via: string;
  /** When it was opened (ms). */
  readonly openedAt: number;
}

/** A session's lifetimes: `idleMs` without use, `maxMs` in all. */
export interface Lifetimes {
  readonly idleMs: number;
  readonly maxMs: number;
}

const digest = (id: string): string => createHash('sha256').update(id).digest('hex');

export class SessionStore {
  constructor(private readonly connection: RedisConnection) {}

  private key(id: string): string {
    return `${this.connection.prefix}admin:session:${digest(id)}`;
  }

  /** Stores a session opened at `session.openedAt`. */
  async open(id: string, session: StoredSession, lifetimes: Lifetimes): Promise<void> {
    const { redis } = this.connection;
    const fields = { admin: session.admin, csrf: session.csrfToken, via: session.via, opened_at: String(session.openedAt) };
    const ttl = Math.min(lifetimes.idleMs, lifetimes.maxMs);
    await this.connection.guard(() => redis.multi().hset(this.key(id), fields).pexpire(this.key(id), ttl).exec());
  }

  /** The live session `id` at `now` with its idle lifetime renewed (never past its absolute end), or null. */
  async find(id: string, lifetimes: Lifetimes, now: number): Promise<StoredSession | null> {
    const { redis } = this.connection;
    const hash = await this.connection.guard(() => redis.hgetall(this.key(id)));
    if (!hash.admin || !hash.csrf) return null;
    // A session stored before sessions had an absolute lifetime has no opened_at: it has expired.
    const openedAt = Number(hash.opened_at ?? 0);
    const left = openedAt + lifetimes.maxMs - now;
    if (!(left > 0)) {
      await this.connection.guard(() => redis.del(this.key(id)));
      return null;
    }
    await this.connection.guard(() => redis.pexpire(this.key(id), Math.min(lifetimes.idleMs, left)));
    return { admin: hash.admin, csrfToken: hash.csrf, via: hash.via ?? 'token', openedAt };
  }

  /** Ends a session. */
  async close(id: string): Promise<void> {
    const { redis } = this.connection;
    await this.connection.guard(() => redis.del(this.key(id)));
  }

  /** Counts one refusal for each of `subjects` in its current window; each one's count and its window's remaining ms. */
  async refusal(subjects: readonly string[], windowMs: number): Promise<Array<{ count: number; resetMs: number }>> {
    const { redis } = this.connection;
    // One MULTI per subject: each counter is its own key (its own slot on a Redis Cluster).
    return Promise.all(
      subjects.map(async (subject) => {
        const key = `${this.connection.prefix}admin:refusals:${subject}`;
        const replies = ((await this.connection.guard(() => redis.multi().incr(key).pexpire(key, windowMs, 'NX').pttl(key).exec())) ??
          []) as Array<[unknown, number]>;
        return { count: Number(replies[0]![1]), resetMs: Math.max(0, Number(replies[2]![1])) };
      }),
    );
  }

  /** Keeps an OpenID Connect sign-in's PKCE verifier, state and nonce until the provider redirects back. */
  async putPending(id: string, pending: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    const { redis } = this.connection;
    await this.connection.guard(() => redis.set(`${this.connection.prefix}admin:oidc:${digest(id)}`, JSON.stringify(pending), 'PX', ttlMs));
  }

  /** Takes (reads and deletes: each is used once) a pending sign-in, or null. */
  async takePending(id: string): Promise<Record<string, string> | null> {
    const { redis } = this.connection;
    const raw = await this.connection.guard(() => redis.getdel(`${this.connection.prefix}admin:oidc:${digest(id)}`));
    return raw ? (JSON.parse(raw) as Record<string, string>) : null;
  }
}
