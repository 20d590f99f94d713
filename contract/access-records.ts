/**
 * Organizations and API keys as Redis holds them: the records, their hash encodings and their
 * key names. admin writes them; authz reads them on every Check (store/lookup-key.lua reads the
 * same two hashes in one round trip, deriving the organization's key name from the prefix as
 * `org` below does; contract/redis/batch.lua derives it too). Every key starts with
 * REDIS_KEY_PREFIX; organization ids never contain ':', '{' or '}' so keys cannot collide. An organization's hash may hold more fields, which admin owns (its
 * display name, disabled state); authz reads only these.
 */

/** One API key: its id, organization and the HMAC of its secret (contract/api-key.ts), never the secret. */
export interface KeyRecord {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly hash: string;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  readonly revoked: boolean;
}

/** What an organization may do: its endpoints, models and limit overrides. */
export interface OrgRecord {
  readonly id: string;
  readonly endpoints: readonly string[];
  readonly models: readonly string[];
  /** Overrides of the default limits; null means "use the default". */
  readonly rpm: number | null;
  readonly tpm: number | null;
  readonly createdAt: number;
}

type Hash = Record<string, string>;

/** The Redis key names of organizations and keys under `prefix`. */
export function accessKeys(prefix: string) {
  return {
    /** Set: every organization id. */
    orgs: `${prefix}orgs`,
    /**
     * Hash: one organization (encodeOrg). It carries the organization's hash tag, like its budget
     * and its settlement and batch state, so the batch admission (contract/redis/batch.lua) reads
     * its `models` in the same slot on a Redis Cluster.
     */
    org: (org: string) => `${prefix}org:{${org}}`,
    /** Set: the organization's key ids (tagged with it too). */
    orgKeys: (org: string) => `${prefix}org:{${org}}:keys`,
    /** Hash: one key (encodeKey). */
    key: (id: string) => `${prefix}key:${id}`,
  };
}

/** Key record to hash fields. */
export function encodeKey(key: KeyRecord): Hash {
  return {
    id: key.id,
    org: key.org,
    name: key.name,
    hash: key.hash,
    created_at: String(key.createdAt),
    expires_at: key.expiresAt === null ? '' : String(key.expiresAt),
    revoked: key.revoked ? '1' : '0',
  };
}

/** Hash fields to a key record, or null when the hash is empty or incomplete. */
export function decodeKey(hash: Hash): KeyRecord | null {
  if (!hash.id || !hash.org || !hash.hash) return null;
  return {
    id: hash.id,
    org: hash.org,
    name: hash.name ?? '',
    hash: hash.hash,
    createdAt: Number(hash.created_at ?? 0),
    expiresAt: hash.expires_at ? Number(hash.expires_at) : null,
    revoked: hash.revoked === '1',
  };
}

/** Organization record to hash fields; absent limits are stored as '' (use the default). */
export function encodeOrg(org: OrgRecord): Hash {
  return {
    id: org.id,
    endpoints: JSON.stringify(org.endpoints),
    models: JSON.stringify(org.models),
    rpm: org.rpm === null ? '' : String(org.rpm),
    tpm: org.tpm === null ? '' : String(org.tpm),
    created_at: String(org.createdAt),
  };
}

/** Hash fields to an organization record, or null when the hash is empty. */
export function decodeOrg(hash: Hash): OrgRecord | null {
  if (!hash.id) return null;
  return {
    id: hash.id,
    endpoints: parseList(hash.endpoints),
    models: parseList(hash.models),
    rpm: hash.rpm ? Number(hash.rpm) : null,
    tpm: hash.tpm ? Number(hash.tpm) : null,
    createdAt: Number(hash.created_at ?? 0),
  };
}

/** A JSON array of strings as stored in a hash field; anything else reads as []. */
export function parseList(raw: string | undefined): string[] {
  try {
    const value: unknown = JSON.parse(raw ?? '[]');
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}
