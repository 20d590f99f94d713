/**
 * Organization and key management (the admin CLI and console): plain hash reads and writes on
 * the shared connection, never on the Check hot path.
 */
import type { KeyRecord, OrgRecord } from '../policy/access.js';
import type { Connection } from './connection.js';
import { decodeKey, decodeOrg, encodeKey, encodeOrg } from './records.js';

/** An organization as the console manages it: the access record plus its display name. */
export interface OrgProfile extends OrgRecord {
  readonly name: string;
}

export class AdminStore {
  constructor(private readonly connection: Connection) {}

  /** Stores a new organization; false when one with that id exists. */
  async createOrg(org: OrgRecord | OrgProfile): Promise<boolean> {
    const { redis, keys } = this.connection;
    const created = await this.connection.guard(() => redis.hsetnx(keys.org(org.id), 'id', org.id));
    if (created === 0) return false;
    await this.saveOrg(org);
    return true;
  }

  /** Writes an organization record (whole; the display name too when given). */
  async saveOrg(org: OrgRecord | OrgProfile): Promise<void> {
    const { redis, keys } = this.connection;
    const fields = 'name' in org ? { ...encodeOrg(org), name: org.name } : encodeOrg(org);
    await this.connection.guard(() => redis.multi().hset(keys.org(org.id), fields).sadd(keys.orgs, org.id).exec());
  }

  /** The organization `id` with its display name ('' when never named), or null. */
  async getOrg(id: string): Promise<OrgProfile | null> {
    const { redis, keys } = this.connection;
    const hash = await this.connection.guard(() => redis.hgetall(keys.org(id)));
    const org = decodeOrg(hash);
    return org && { ...org, name: hash.name ?? '' };
  }

  /** Every organization, sorted by id. */
  async listOrgs(): Promise<OrgProfile[]> {
    const { redis, keys } = this.connection;
    const ids = (await this.connection.guard(() => redis.smembers(keys.orgs))).sort();
    const orgs = await Promise.all(ids.map((id) => this.getOrg(id)));
    return orgs.filter((org): org is OrgProfile => org !== null);
  }

  /** Stores a new key record; false when the id is taken. */
  async createKey(key: KeyRecord): Promise<boolean> {
    const { redis, keys } = this.connection;
    const created = await this.connection.guard(() => redis.hsetnx(keys.key(key.id), 'id', key.id));
    if (created === 0) return false;
    await this.saveKey(key);
    return true;
  }

  /** Writes a key record (whole). */
  async saveKey(key: KeyRecord): Promise<void> {
    const { redis, keys } = this.connection;
    await this.connection.guard(() => redis.multi().hset(keys.key(key.id), encodeKey(key)).sadd(keys.orgKeys(key.org), key.id).exec());
  }

  /** The key record `id`, or null. */
  async getKey(id: string): Promise<KeyRecord | null> {
    const { redis, keys } = this.connection;
    return decodeKey(await this.connection.guard(() => redis.hgetall(keys.key(id))));
  }

  /** Every key of an organization, oldest first. */
  async listKeys(org: string): Promise<KeyRecord[]> {
    const { redis, keys } = this.connection;
    const ids = await this.connection.guard(() => redis.smembers(keys.orgKeys(org)));
    const records = await Promise.all(ids.map((id) => this.getKey(id)));
    return records.filter((key): key is KeyRecord => key !== null).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }
}
