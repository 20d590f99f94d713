/**
 * Administrators and their tokens in Redis, under `<prefix>admin:`. A token is stored only as
 * its HMAC (the key-hash secret), and found by it: `admin:token:<digest>` names the
 * administrator; `admin:token-id:<id>` maps the token's public id back for revocation. Names
 * and roles are validated by the operations (operations/rules.ts), not here. admin's operations
 * change them through journalled changes (store/changes.ts) built here; the administrator's
 * record is the entity each of its changes is checked against.
 */
import type { RedisConnection } from '../../../contract/redis-connection.js';
import { versionOf, type Change } from './changes.js';

/** An administrator as stored. */
export interface AdminRecord {
  readonly name: string;
  readonly role: string;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly disabled: boolean;
  /** The audit seq of the change that last wrote it (0: none since versions began), as read. */
  readonly version?: number;
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

  private adminFields(admin: AdminRecord): Record<string, string> {
    return {
      name: admin.name,
      role: admin.role,
      created_at: String(admin.createdAt),
      created_by: admin.createdBy,
      disabled: admin.disabled ? '1' : '0',
    };
  }

  /** The change that creates an administrator (refused when the name is taken by then). */
  createChange(admin: AdminRecord): Change {
    return {
      guards: [{ key: this.k.user(admin.name), expect: 'absent' }],
      ops: [
        { op: 'hset', key: this.k.user(admin.name), fields: this.adminFields(admin) },
        { op: 'sadd', key: this.k.users, member: admin.name },
      ],
    };
  }

  /** The change that writes an administrator read at `version` (whole). */
  saveChange(admin: AdminRecord, version: number): Change {
    return {
      guards: [{ key: this.k.user(admin.name), expect: version }],
      ops: [
        { op: 'hset', key: this.k.user(admin.name), fields: this.adminFields(admin) },
        { op: 'sadd', key: this.k.users, member: admin.name },
      ],
    };
  }

  /**
   * The change that stores a token of `token.admin` by its digest (the administrator read at
   * `adminVersion`, or created by the same change: `absent`). Check tokenTaken first.
   */
  addTokenChange(digest: string, token: AdminTokenRecord, adminVersion: number | 'absent'): Change {
    const fields = { id: token.id, admin: token.admin, created_at: String(token.createdAt), created_by: token.createdBy };
    return {
      guards: [
        ...(adminVersion === 'absent' ? [] : [{ key: this.k.user(token.admin), expect: adminVersion }]),
        { key: this.k.token(digest), expect: 'absent' },
      ],
      ops: [
        { op: 'set', key: this.k.tokenId(token.id), value: digest },
        { op: 'hset', key: this.k.token(digest), fields },
        { op: 'sadd', key: this.k.userTokens(token.admin), member: token.id },
      ],
    };
  }

  /** True when a token with this digest or public id is stored. */
  async tokenTaken(digest: string, id: string): Promise<boolean> {
    const { redis } = this.connection;
    const [byDigest, byId] = await Promise.all([
      this.connection.guard(() => redis.exists(this.k.token(digest))),
      this.connection.guard(() => redis.exists(this.k.tokenId(id))),
    ]);
    return byDigest === 1 || byId === 1;
  }

  /** The digest of the token with public id `id`, if administrator `name` holds it, else null. */
  async digestOf(name: string, id: string): Promise<string | null> {
    const { redis } = this.connection;
    const digest = await this.connection.guard(() => redis.get(this.k.tokenId(id)));
    if (!digest) return null;
    const admin = await this.connection.guard(() => redis.hget(this.k.token(digest), 'admin'));
    return admin === name ? digest : null;
  }

  /** The change that deletes the token `id` (digest `digest`) of `name`, read at `version`, remembering the digest as revoked at `now`. */
  revokeTokenChange(name: string, id: string, digest: string, version: number, now: number): Change {
    return {
      guards: [{ key: this.k.user(name), expect: version }],
      ops: [
        { op: 'del', key: this.k.token(digest) },
        { op: 'del', key: this.k.tokenId(id) },
        { op: 'srem', key: this.k.userTokens(name), member: id },
        { op: 'hset', key: this.k.revoked, fields: { [digest]: String(now) } },
      ],
    };
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
      version: versionOf(hash),
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

  /** True when the token with this digest was revoked (it is never registered again, not even from a bootstrap file). */
  async wasRevoked(digest: string): Promise<boolean> {
    const { redis } = this.connection;
    return (await this.connection.guard(() => redis.hexists(this.k.revoked, digest))) === 1;
  }
}
