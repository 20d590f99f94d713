/**
 * The Redis key layout and the hash encodings of key and organization records, pure. Every key
 * starts with REDIS_KEY_PREFIX; organization ids never contain ':' so keys cannot collide.
 */
import { settlementKeys } from '../../../contract/redis/settlement-keys.js';
import type { KeyRecord, OrgRecord } from '../policy/access.js';
import type { UsageRecord } from '../policy/usage.js';

/** Names of every Redis key authz uses, under `prefix`. */
export function layout(prefix: string) {
  const settlement = settlementKeys(prefix);
  return {
    prefix,
    orgs: `${prefix}orgs`,
    org: (org: string) => `${prefix}org:${org}`,
    orgKeys: (org: string) => `${prefix}org:${org}:keys`,
    key: (id: string) => `${prefix}key:${id}`,
    requestBucket: (org: string, model: string) => `${prefix}rl:req:${org}:${model}`,
    tokenBucket: settlement.tokenBucket,
    usageStream: settlement.usageStream,
    usageDaily: settlement.usageDaily,
    auditStream: `${prefix}audit`,
    auditHead: `${prefix}audit:head`,
  };
}

export type Layout = ReturnType<typeof layout>;

type Hash = Record<string, string>;

/** Flat HGETALL reply ([field, value, …]) to an object. */
export function fromPairs(pairs: readonly string[]): Hash {
  const hash: Hash = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[pairs[i]!] = pairs[i + 1]!;
  return hash;
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

function parseList(raw: string | undefined): string[] {
  try {
    const value: unknown = JSON.parse(raw ?? '[]');
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

/** One recorded request, as the usage stream holds it. */
export interface UsageEntry extends UsageRecord {
  readonly streamId: string;
}

/** A usage stream entry's fields to a UsageEntry. */
export function decodeUsage(streamId: string, hash: Hash): UsageEntry {
  return {
    streamId,
    org: hash.org ?? '',
    keyId: hash.key ?? '',
    model: hash.model ?? '',
    requestId: hash.request_id ?? '',
    tokens: Number(hash.tokens ?? 0),
    time: Number(hash.ts ?? 0),
  };
}

export { utcDay } from '../../../contract/redis/settlement-keys.js';
