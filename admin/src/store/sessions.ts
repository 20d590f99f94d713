/**
 * Console sessions and the sign-in throttle in Redis, so a restart or a second replica keeps
 * everyone signed in. A session is stored under the SHA-256 of its id (a Redis reader learns no
 * usable cookie), with the administrator's name and the CSRF token, and expires on its own
 * after the idle lifetime (renewed on use). Failed sign-ins are counted per client address in a
 * fixed window.
 */
import { createHash } from 'node:crypto';
import type { RedisConnection } from '../../../contract/redis-connection.js';

export interface StoredSession {
  readonly admin: string;
  readonly csrfToken: string;
  /** How the administrator authenticated: `token` or `oidc`. */
  readonly via: string;
}

const digest = (id: string): string => createHash('sha256').update(id).digest('hex');

export class SessionStore {
  constructor(private readonly connection: RedisConnection) {}

  private key(id: string): string {
    return `${this.connection.prefix}admin:session:${digest(id)}`;
  }

  /** Stores a session for `ttlMs`. */
  async open(id: string, session: StoredSession, ttlMs: number): Promise<void> {
    const { redis } = this.connection;
    await this.connection.guard(() =>
      redis
        .multi()
        .hset(this.key(id), { admin: session.admin, csrf: session.csrfToken, via: session.via })
        .pexpire(this.key(id), ttlMs)
        .exec(),
    );
  }

  /** The live session `id` with its lifetime renewed, or null. */
  async find(id: string, ttlMs: number): Promise<StoredSession | null> {
    const { redis } = this.connection;
    const [[, hash]] = (await this.connection.guard(() => redis.multi().hgetall(this.key(id)).pexpire(this.key(id), ttlMs).exec())) as [
      [unknown, Record<string, string>],
    ];
    return hash?.admin && hash.csrf ? { admin: hash.admin, csrfToken: hash.csrf, via: hash.via ?? 'token' } : null;
  }

  /** Ends a session. */
  async close(id: string): Promise<void> {
    const { redis } = this.connection;
    await this.connection.guard(() => redis.del(this.key(id)));
  }

  /** Counts one failed sign-in from `client` in the current window; returns the count and the window's remaining ms. */
  async failure(client: string, windowMs: number): Promise<{ count: number; resetMs: number }> {
    const { redis } = this.connection;
    const key = `${this.connection.prefix}admin:signin-fail:${client}`;
    const [[, count], , [, ttl]] = (await this.connection.guard(() =>
      redis.multi().incr(key).pexpire(key, windowMs, 'NX').pttl(key).exec(),
    )) as [[unknown, number], unknown, [unknown, number]];
    return { count, resetMs: Math.max(0, ttl) };
  }

  /** Failed sign-ins from `client` in the current window, and its remaining ms. */
  async failures(client: string): Promise<{ count: number; resetMs: number }> {
    const { redis } = this.connection;
    const key = `${this.connection.prefix}admin:signin-fail:${client}`;
    const [[, count], [, ttl]] = (await this.connection.guard(() => redis.multi().get(key).pttl(key).exec())) as [
      [unknown, string | null],
      [unknown, number],
    ];
    return { count: Number(count ?? 0), resetMs: Math.max(0, ttl) };
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
