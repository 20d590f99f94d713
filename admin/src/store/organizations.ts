/**
 * Organizations and their keys (the CLI and the console): the records of
 * contract/access-records.ts, plain hash reads and writes, plus what only admin keeps in an
 * organization's hash (display name, disabled state) and the deleted organizations' ids.
 */
import {
  accessKeys,
  decodeKey,
  decodeOrg,
  encodeKey,
  encodeOrg,
  parseList,
  type KeyRecord,
  type OrgRecord,
} from '../../../contract/access-records.js';
import type { RedisConnection } from '../../../contract/redis-connection.js';

/** An organization as the console manages it: the access record plus its display name and state. */
export interface OrgProfile extends OrgRecord {
  readonly name: string;
  /**
   * A disabled organization has no endpoints (so Check refuses it) and keeps the ones it had in
   * `heldEndpoints` until it is enabled again.
   */
  readonly disabled?: boolean;
  readonly heldEndpoints?: readonly string[];
}

export class OrgStore {
  private readonly keys: ReturnType<typeof accessKeys>;
  private readonly deleted: string;

  constructor(private readonly connection: RedisConnection) {
    this.keys = accessKeys(connection.prefix);
    this.deleted = `${connection.prefix}orgs:deleted`;
  }

  /** Stores a new organization; false when one with that id exists. */
  async createOrg(org: OrgRecord | OrgProfile): Promise<boolean> {
    const { redis } = this.connection;
    const { keys } = this;
    const created = await this.connection.guard(() => redis.hsetnx(keys.org(org.id), 'id', org.id));
    if (created === 0) return false;
    await this.saveOrg(org);
    return true;
  }

  /** Writes an organization record (whole; the display name too when given). */
  async saveOrg(org: OrgRecord | OrgProfile): Promise<void> {
    const { redis } = this.connection;
    const { keys } = this;
    const fields: Record<string, string> = 'name' in org ? { ...encodeOrg(org), name: org.name } : encodeOrg(org);
    if ('disabled' in org) {
      fields.disabled = org.disabled ? '1' : '0';
      fields.held_endpoints = JSON.stringify(org.heldEndpoints ?? []);
    }
    await this.connection.guard(() => redis.multi().hset(keys.org(org.id), fields).sadd(keys.orgs, org.id).exec());
  }

  /** The organization `id` with its display name ('' when never named), or null. */
  async getOrg(id: string): Promise<OrgProfile | null> {
    const { redis } = this.connection;
    const { keys } = this;
    const hash = await this.connection.guard(() => redis.hgetall(keys.org(id)));
    const org = decodeOrg(hash);
    return org && { ...org, name: hash.name ?? '', disabled: hash.disabled === '1', heldEndpoints: parseList(hash.held_endpoints) };
  }

  /** Every organization, sorted by id. */
  async listOrgs(): Promise<OrgProfile[]> {
    const { redis } = this.connection;
    const { keys } = this;
    const ids = (await this.connection.guard(() => redis.smembers(keys.orgs))).sort();
    const orgs = await Promise.all(ids.map((id) => this.getOrg(id)));
    return orgs.filter((org): org is OrgProfile => org !== null);
  }

  /**
   * Deletes an organization and its keys (so every key is refused at once); the usage stream,
   * the daily counters and the audit trail keep their records. The id and time are remembered
   * under `orgs:deleted`.
   */
  async deleteOrg(id: string, now: number): Promise<number> {
    const { redis } = this.connection;
    const { keys } = this;
    const keyIds = await this.connection.guard(() => redis.smembers(keys.orgKeys(id)));
    await this.connection.guard(() =>
      redis
        .multi()
        .del(keys.org(id), keys.orgKeys(id), ...keyIds.map((keyId) => keys.key(keyId)))
        .srem(keys.orgs, id)
        .hset(this.deleted, id, String(now))
        .exec(),
    );
    return keyIds.length;
  }

  /** Stores a new key record; false when the id is taken. */
  async createKey(key: KeyRecord): Promise<boolean> {
    const { redis } = this.connection;
    this.connection.refuseOnCluster('creating a key');
    const { keys } = this;
    const created = await this.connection.guard(() => redis.hsetnx(keys.key(key.id), 'id', key.id));
    if (created === 0) return false;
    await this.saveKey(key);
    return true;
  }

  /** Writes a key record (whole). */
  async saveKey(key: KeyRecord): Promise<void> {
    const { redis } = this.connection;
    const { keys } = this;
    await this.connection.guard(() => redis.multi().hset(keys.key(key.id), encodeKey(key)).sadd(keys.orgKeys(key.org), key.id).exec());
  }

  /** The key record `id`, or null. */
  async getKey(id: string): Promise<KeyRecord | null> {
    const { redis } = this.connection;
    const { keys } = this;
    return decodeKey(await this.connection.guard(() => redis.hgetall(keys.key(id))));
  }

  /** Every key of an organization, oldest first. */
  async listKeys(org: string): Promise<KeyRecord[]> {
    const { redis } = this.connection;
    const { keys } = this;
    const ids = await this.connection.guard(() => redis.smembers(keys.orgKeys(org)));
    const records = await Promise.all(ids.map((id) => this.getKey(id)));
    return records.filter((key): key is KeyRecord => key !== null).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }
}
