/**
 * Key operations of the admin core: create (the full key is returned once and never stored),
 * rename or re-date, revoke, rotate with an overlap, list. Redis holds only a key's id and the
 * HMAC of its secret; every audit record of a key names it by id and by its name. Every change
 * is recorded, then applied (journal.ts); a new key stamps its organization, so a deletion
 * that read the organization's keys before it is refused rather than leaving it behind.
 */
import type { KeyRecord } from '../../../contract/access-records.js';
import type { StoredKey } from '../store/organizations.js';
import { combine, type Change } from '../store/changes.js';
import { hashSecret, mintKey } from '../../../contract/api-key.js';
import type { AdminDeps, Who } from './deps.js';
import { AdminError, invalid } from './errors.js';
import { existingOrg } from './orgs.js';
import * as rules from './rules.js';
import { keyStatus, keyView, type KeyView } from './views.js';

const MINT_ATTEMPTS = 5;
/** How many of the newest usage records a key list reads to find each key's last use. */
const LAST_USE_SCAN = 100_000;

export interface KeyInput {
  readonly org: unknown;
  readonly name?: unknown;
  readonly expiresAt?: unknown;
}

export type KeyChanges = Omit<KeyInput, 'org'>;

/** A created key: its view plus the full key, shown once. */
export type CreatedKey = KeyView & { readonly key: string };

/** Key operations bound to `deps`. */
export function keyOperations(deps: AdminDeps) {
  const existingKey = async (id: unknown): Promise<StoredKey> => {
    const key = await deps.orgs.getKey(rules.keyId(id));
    if (!key) throw new AdminError('not_found', `no key ${String(id)}`);
    return key;
  };

  /** A new key record with an unused id, and its full key (shown once; only its HMAC is stored). */
  const mint = async (template: Omit<KeyRecord, 'id' | 'hash'>): Promise<{ record: KeyRecord; key: string }> => {
    for (let attempt = 0; attempt < MINT_ATTEMPTS; attempt += 1) {
      const minted = mintKey(deps.config.keyPrefix);
      const record: KeyRecord = { ...template, id: minted.id, hash: hashSecret(minted.id, minted.secret, deps.config.keyHashSecret) };
      if (!(await deps.orgs.keyExists(record.id))) return { record, key: minted.key };
    }
    throw new Error('could not mint an unused key id');
  };

  /** The change that creates `record` for its organization as read now. */
  const createChange = async (record: KeyRecord): Promise<Change> => {
    const org = await existingOrg(deps, record.org);
    return deps.orgs.createKeyChange(record, org.version ?? 0);
  };

  return {
    /** Creates a key for an organization; never one born expired (its secret would be shown for nothing). */
    async createKey(input: KeyInput, who: Who): Promise<CreatedKey> {
      const org = await existingOrg(deps, input.org);
      if (org.disabled) throw new AdminError('conflict', `organization ${org.id} is disabled; enable it first`);
      const name = input.name === undefined ? '' : rules.displayName(input.name);
      const expiresAt = input.expiresAt === undefined ? null : rules.dateTime(input.expiresAt, 'expiresAt');
      if (expiresAt !== null && expiresAt <= deps.now())
        throw invalid('expiresAt', 'must be in the future (a key cannot be created already expired)');
      const { record, key } = await mint({ org: org.id, name, createdAt: deps.now(), expiresAt, revoked: false });
      const created: CreatedKey = { ...keyView(record, deps.now()), key };
      await deps.journal.apply(
        { ...who, action: 'key.create', target: `key:${record.id}`, detail: { org: org.id, name, expiresAt: created.expiresAt } },
        deps.orgs.createKeyChange(record, org.version ?? 0),
      );
      return created;
    },

    /** Renames a key or changes its expiry (null: never expires). */
    async updateKey(id: unknown, input: KeyChanges, who: Who): Promise<KeyView> {
      const key = await existingKey(id);
      const name = input.name === undefined ? key.name : rules.displayName(input.name);
      const expiresAt = input.expiresAt === undefined ? key.expiresAt : rules.dateTime(input.expiresAt, 'expiresAt');
      const { version, ...record } = key;
      const updated: KeyRecord = { ...record, name, expiresAt };
      const detail: Record<string, string | null> = { org: key.org, name };
      if (name !== key.name) detail.previousName = key.name;
      if (input.expiresAt !== undefined) detail.expiresAt = keyView(updated, 0).expiresAt;
      await deps.journal.apply(
        { ...who, action: 'key.update', target: `key:${key.id}`, detail },
        deps.orgs.saveKeyChange(updated, version),
      );
      return keyView(updated, deps.now());
    },

    /** Revokes a key: refused from the next Check (within the key cache's lifetime). */
    async revokeKey(id: unknown, who: Who): Promise<KeyView> {
      const key = await existingKey(id);
      const { version, ...record } = key;
      const revoked: KeyRecord = { ...record, revoked: true };
      await deps.journal.apply(
        { ...who, action: 'key.revoke', target: `key:${key.id}`, detail: { org: key.org, name: key.name } },
        deps.orgs.saveKeyChange(revoked, version),
      );
      return keyView(revoked, deps.now());
    },

    /**
     * Replaces an active key: a new key (same organization, name and expiry) is created first,
     * and the old one is set to expire `overlapSeconds` from now (or earlier, if it already
     * would), in one recorded change, so both work during the overlap.
     */
    async rotateKey(id: unknown, overlap: unknown, who: Who): Promise<{ old: KeyView; new: CreatedKey }> {
      const overlapSeconds = rules.overlapSeconds(overlap);
      const key = await existingKey(id);
      const now = deps.now();
      if (keyStatus(key, now) !== 'active')
        throw new AdminError('conflict', `key ${key.id} is ${keyStatus(key, now)}; only an active key can be rotated`);
      const { record, key: full } = await mint({ org: key.org, name: key.name, createdAt: now, expiresAt: key.expiresAt, revoked: false });
      const overlapEnd = now + overlapSeconds * 1000;
      const { version, ...current } = key;
      const old: KeyRecord = { ...current, expiresAt: key.expiresAt === null ? overlapEnd : Math.min(key.expiresAt, overlapEnd) };
      await deps.journal.apply(
        {
          ...who,
          action: 'key.rotate',
          target: `key:${key.id}`,
          detail: { org: key.org, name: key.name, newKey: record.id, overlapSeconds, oldExpiresAt: keyView(old, now).expiresAt },
        },
        combine(await createChange(record), deps.orgs.saveKeyChange(old, version)),
      );
      return { old: keyView(old, now), new: { ...keyView(record, now), key: full } };
    },

    /**
     * Every key of an organization, oldest first, without secrets, each with its last use
     * (null: not among the newest LAST_USE_SCAN usage records, or never used).
     */
    async listKeys(org: unknown): Promise<{ org: string; keys: Array<KeyView & { lastUsedAt: string | null }> }> {
      const found = await existingOrg(deps, org);
      const now = deps.now();
      const keys = await deps.orgs.listKeys(found.id);
      const used = await deps.reports.lastUse(
        found.id,
        keys.map((key) => key.id),
        LAST_USE_SCAN,
      );
      const lastUsed = (id: string) => (used.has(id) ? new Date(used.get(id)!).toISOString() : null);
      return { org: found.id, keys: keys.map((key) => ({ ...keyView(key, now), lastUsedAt: lastUsed(key.id) })) };
    },
  };
}
