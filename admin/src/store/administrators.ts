/**
 * Administrators and their tokens in Redis, under `<prefix>admin:`. A token is stored only as
 * its HMAC (the key-hash secret), and found by it: `admin:token:<digest>` names the
 * administrator; `admin:token-id:<id>` maps the token's public id back for revocation. Names
 * and roles are validated by the operations (operations/rules.ts), not here.
 */
import type { RedisConnection } from '../../../contract/redis-connection.js';

/** An administrator as stored. */
export interface AdminRecord {
  readonly name: string;
  readonly role: string;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly disabled: boolean;
}

/** A token's public facts (never the token or its digest). */
export interface AdminTokenRecord {
  readonly id: string;
  readonly admin: string;
  readonly createdAt: number;
  readonly createdBy: string;
  /** Last time the token authenticated (ms), or null; updated at most once a minute. */
  readonly lastUsedAt: number | null;
}

const LAST_USED_GRANULARITY_MS = 60_000;

export class AdministratorStore {
  constructor(private readonly connection: RedisConnection) {}

  private get k() {
    const p = `${this.connection.prefix}admin:`;
    return {
      users: `${p}users`,
      user: (name: string) => `${p}user:${name}`,
      userTokens: (name: string) => `${p}user:${name}:tokens`,
      token: (digest: string) => `${p}token:${digest}`,
      tokenId: (id: string) => `${p}token-id:${id}`,
      revoked: `${p}tokens:revoked`,
    };
  }

  /** Creates an administrator; false when the name is taken. */
  async create(admin: AdminRecord): Promise<boolean> {
    const { redis } = this.connection;
    const created = await this.connection.guard(() => redis.hsetnx(this.k.user(admin.name), 'name', admin.name));
    if (created === 0) return false;
    await this.save(admin);
    return true;
  }

  /** Writes an administrator record (whole). */
  async save(admin: AdminRecord): Promise<void> {
    const { redis } = this.connection;
    const fields = {
      name: admin.name,
      role: admin.role,
      created_at: String(admin.createdAt),
      created_by: admin.createdBy,
      disabled: admin.disabled ? '1' : '0',
    };
    await this.connection.guard(() => redis.multi().hset(this.k.user(admin.name), fields).sadd(this.k.users, admin.name).exec());
  }

  /** The administrator `name`, or null. */
  async get(name: string): Promise<AdminRecord | null> {
    const { redis } = this.connection;
    const hash = await this.connection.guard(() => redis.hgetall(this.k.user(name)));
    if (!hash.name || !hash.role) return null;
    return {
      name: hash.name,
      role: hash.role,
      createdAt: Number(hash.created_at ?? 0),
      createdBy: hash.created_by ?? '',
      disabled: hash.disabled === '1',
    };
  }

  /** Every administrator, by name. */
  async list(): Promise<AdminRecord[]> {
    const { redis } = this.connection;
    const names = (await this.connection.guard(() => redis.smembers(this.k.users))).sort();
    return (await Promise.all(names.map((name) => this.get(name)))).filter((a): a is AdminRecord => a !== null);
  }

  /** How many administrators exist. */
  async count(): Promise<number> {
    const { redis } = this.connection;
    return this.connection.guard(() => redis.scard(this.k.users));
  }

  /** Stores a token by its digest; false when that token or id is already stored. */
  async addToken(digest: string, token: AdminTokenRecord): Promise<boolean> {
    const { redis } = this.connection;
    const claimed = await this.connection.guard(() => redis.set(this.k.tokenId(token.id), digest, 'NX'));
    if (claimed !== 'OK') return false;
    const fields = { id: token.id, admin: token.admin, created_at: String(token.createdAt), created_by: token.createdBy };
    const set = await this.connection.guard(() => redis.hsetnx(this.k.token(digest), 'id', token.id));
    if (set === 0) {
      await this.connection.guard(() => redis.del(this.k.tokenId(token.id)));
      return false;
    }
    await this.connection.guard(() =>
      redis.multi().hset(this.k.token(digest), fields).sadd(this.k.userTokens(token.admin), token.id).exec(),
    );
    return true;
  }

  /** The token with this digest, its last use recorded (coarsely), or null. */
  async findToken(digest: string, now: number): Promise<AdminTokenRecord | null> {
    const { redis } = this.connection;
    const hash = await this.connection.guard(() => redis.hgetall(this.k.token(digest)));
    if (!hash.id || !hash.admin) return null;
    const lastUsedAt = hash.last_used_at ? Number(hash.last_used_at) : null;
    if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) {
      await this.connection.guard(() => redis.hset(this.k.token(digest), 'last_used_at', String(now)));
    }
    return { id: hash.id, admin: hash.admin, createdAt: Number(hash.created_at ?? 0), createdBy: hash.created_by ?? '', lastUsedAt };
  }

  /** An administrator's tokens (public facts only), oldest first. */
  async tokensOf(name: string): Promise<AdminTokenRecord[]> {
    const { redis } = this.connection;
    const ids = await this.connection.guard(() => redis.smembers(this.k.userTokens(name)));
    const found: AdminTokenRecord[] = [];
    for (const id of ids) {
      const digest = await this.connection.guard(() => redis.get(this.k.tokenId(id)));
      const hash = digest ? await this.connection.guard(() => redis.hgetall(this.k.token(digest))) : {};
      if (hash.id)
        found.push({
          id,
          admin: name,
          createdAt: Number(hash.created_at ?? 0),
          createdBy: hash.created_by ?? '',
          lastUsedAt: hash.last_used_at ? Number(hash.last_used_at) : null,
        });
    }
    return found.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** The administrator whose token has public id `id`, or null. */
  async ownerOfTokenId(id: string): Promise<string | null> {
    const { redis } = this.connection;
    const digest = await this.connection.guard(() => redis.get(this.k.tokenId(id)));
    if (!digest) return null;
    return (await this.connection.guard(() => redis.hget(this.k.token(digest), 'admin'))) ?? null;
  }

  /** Deletes the token `id` of administrator `name`, remembering its digest as revoked at `now`; false when there is none. */
  async revokeToken(name: string, id: string, now: number): Promise<boolean> {
    const { redis } = this.connection;
    const digest = await this.connection.guard(() => redis.get(this.k.tokenId(id)));
    if (!digest) return false;
    const hash = await this.connection.guard(() => redis.hgetall(this.k.token(digest)));
    if (hash.admin !== name) return false;
    await this.connection.guard(() =>
      redis
        .multi()
        .del(this.k.token(digest), this.k.tokenId(id))
        .srem(this.k.userTokens(name), id)
        .hset(this.k.revoked, digest, String(now))
        .exec(),
    );
    return true;
  }

  /** True when the token with this digest was revoked (it is never registered again, not even from a bootstrap file). */
  async wasRevoked(digest: string): Promise<boolean> {
    const { redis } = this.connection;
    return (await this.connection.guard(() => redis.hexists(this.k.revoked, digest))) === 1;
  }
}
