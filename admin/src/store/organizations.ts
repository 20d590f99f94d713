/**
 * Organizations and their keys (the CLI and the console): the records of
 * contract/access-records.ts, plain hash reads and writes, plus what only admin keeps in an
 * organization's hash (display name, disabled state, version) and the deleted organizations'
 * ids. admin's operations change them through journalled changes (store/changes.ts) built here.
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
import { versionOf, writeDirect, type Change, type ChangeOp } from './changes.js';

/** An organization as the console manages it: the access record plus its display name and state. */
export interface OrgProfile extends OrgRecord {
  readonly name: string;
  /**
   * A disabled organization has no endpoints (so Check refuses it) and keeps the ones it had in
   * `heldEndpoints` until it is enabled again.
   */
  readonly disabled?: boolean;
  readonly heldEndpoints?: readonly string[];
  /** The audit seq of the change that last wrote it (0: none since versions began), as read. */
  readonly version?: number;
}

/** A key record as stored, with its version (the audit seq of the change that last wrote it). */
export type StoredKey = KeyRecord & { readonly version: number };

/** The hash fields admin writes for an organization (the display name and state when given). */
function orgFields(org: OrgRecord | OrgProfile): Record<string, string> {
  const fields: Record<string, string> = 'name' in org ? { ...encodeOrg(org), name: org.name } : encodeOrg(org);
  if ('disabled' in org) {
    fields.disabled = org.disabled ? '1' : '0';
    fields.held_endpoints = JSON.stringify(org.heldEndpoints ?? []);
  }
  return fields;
}

export class OrgStore {
  private readonly keys: ReturnType<typeof accessKeys>;
  private readonly deleted: string;

  constructor(private readonly connection: RedisConnection) {
    this.keys = accessKeys(connection.prefix);
    this.deleted = `${connection.prefix}orgs:deleted`;
  }

  /** The change that creates an organization (refused when one with that id exists by then). */
  createOrgChange(org: OrgProfile): Change {
    const { keys } = this;
    return {
      guards: [{ key: keys.org(org.id), expect: 'absent' }],
      ops: [
        { op: 'hset', key: keys.org(org.id), fields: orgFields(org) },
        { op: 'sadd', key: keys.orgs, member: org.id },
      ],
    };
  }

  /** The change that writes an organization read at `version` (its fields given whole). */
  saveOrgChange(org: OrgProfile, version: number): Change {
    const { keys } = this;
    return {
      guards: [{ key: keys.org(org.id), expect: version }],
      ops: [
        { op: 'hset', key: keys.org(org.id), fields: orgFields(org) },
        { op: 'sadd', key: keys.orgs, member: org.id },
      ],
    };
  }

  /**
   * The change that deletes an organization read at `version` and its keys `keyIds` (so every key
   * is refused at once); the usage stream, the daily counters and the audit trail keep their
   * records. The id and time are remembered under `orgs:deleted`. A key created since the read
   * stamped the organization, so this change is then refused rather than leaving it behind.
   */
  deleteOrgChange(id: string, keyIds: readonly string[], version: number, now: number): Change {
    const { keys } = this;
    return {
      guards: [{ key: keys.org(id), expect: version, gone: true }],
      ops: [
        { op: 'del', key: keys.org(id) },
        { op: 'del', key: keys.orgKeys(id) },
        ...keyIds.map((keyId): ChangeOp => ({ op: 'del', key: keys.key(keyId) })),
        { op: 'srem', key: keys.orgs, member: id },
        { op: 'hset', key: this.deleted, fields: { [id]: String(now) } },
      ],
    };
  }

  /** The change that creates a key for its organization, read at `orgVersion` (which it stamps). */
  createKeyChange(key: KeyRecord, orgVersion: number): Change {
    const { keys } = this;
    return {
      guards: [
        { key: keys.org(key.org), expect: orgVersion },
        { key: keys.key(key.id), expect: 'absent' },
      ],
      ops: [
        { op: 'hset', key: keys.key(key.id), fields: encodeKey(key) },
        { op: 'sadd', key: keys.orgKeys(key.org), member: key.id },
      ],
    };
  }

  /** The change that writes a key record read at `version` (whole). */
  saveKeyChange(key: KeyRecord, version: number): Change {
    const { keys } = this;
    return {
      guards: [{ key: keys.key(key.id), expect: version }],
      ops: [
        { op: 'hset', key: keys.key(key.id), fields: encodeKey(key) },
        { op: 'sadd', key: keys.orgKeys(key.org), member: key.id },
      ],
    };
  }

  /** True when a key record with this id exists (a minted id is checked before its change is recorded). */
  async keyExists(id: string): Promise<boolean> {
    const { redis } = this.connection;
    return (await this.connection.guard(() => redis.exists(this.keys.key(id)))) === 1;
  }

  /** Stores a new organization directly, unaudited (test fixtures; admin's operations record a change); false when it exists. */
  async createOrg(org: OrgRecord | OrgProfile): Promise<boolean> {
    const { redis } = this.connection;
    const { keys } = this;
    const created = await this.connection.guard(() => redis.hsetnx(keys.org(org.id), 'id', org.id));
    if (created === 0) return false;
    await writeDirect(this.connection, [
      { op: 'hset', key: keys.org(org.id), fields: orgFields(org) },
      { op: 'sadd', key: keys.orgs, member: org.id },
    ]);
    return true;
  }

  /** The organization `id` with its display name ('' when never named) and version, or null. */
  async getOrg(id: string): Promise<OrgProfile | null> {
    const { redis } = this.connection;
    const { keys } = this;
    const hash = await this.connection.guard(() => redis.hgetall(keys.org(id)));
    const org = decodeOrg(hash);
    return (
      org && {
        ...org,
        name: hash.name ?? '',
        disabled: hash.disabled === '1',
        heldEndpoints: parseList(hash.held_endpoints),
        version: versionOf(hash),
      }
    );
  }

  /** Every organization, sorted by id. */
  async listOrgs(): Promise<OrgProfile[]> {
    const { redis } = this.connection;
    const { keys } = this;
    const ids = (await this.connection.guard(() => redis.smembers(keys.orgs))).sort();
    const orgs = await Promise.all(ids.map((id) => this.getOrg(id)));
    return orgs.filter((org): org is OrgProfile => org !== null);
  }

  /** The ids of an organization's keys. */
  async keyIdsOf(org: string): Promise<string[]> {
    const { redis } = this.connection;
    return this.connection.guard(() => redis.smembers(this.keys.orgKeys(org)));
  }

  /** Stores a new key record directly, unaudited (test fixtures); false when the id is taken. */
  async createKey(key: KeyRecord): Promise<boolean> {
    const { redis } = this.connection;
    const { keys } = this;
    const created = await this.connection.guard(() => redis.hsetnx(keys.key(key.id), 'id', key.id));
    if (created === 0) return false;
    await this.saveKey(key);
    return true;
  }

  /** Writes a key record directly, unaudited (test fixtures). */
  async saveKey(key: KeyRecord): Promise<void> {
    await writeDirect(this.connection, this.saveKeyChange(key, 0).ops);
  }

  /** The key record `id` with its version, or null. */
  async getKey(id: string): Promise<StoredKey | null> {
    const { redis } = this.connection;
    const { keys } = this;
    const hash = await this.connection.guard(() => redis.hgetall(keys.key(id)));
    const key = decodeKey(hash);
    return key && { ...key, version: versionOf(hash) };
  }

  /** Every key of an organization, oldest first. */
  async listKeys(org: string): Promise<StoredKey[]> {
    const ids = await this.keyIdsOf(org);
    const records = await Promise.all(ids.map((id) => this.getKey(id)));
    return records.filter((key): key is StoredKey => key !== null).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }
}
