/**
 * The audit trail's hash chain, pure: each record's hash is the SHA-256 of its canonical form,
 * which includes the previous record's hash, so anyone can recompute it with nothing secret.
 * What makes the chain the writer's is a signature (signing.ts): every record's hash is signed
 * with the trail's Ed25519 key, copies of those signatures are checkpointed outside Redis
 * (anchor.ts), and an export ends with a signed manifest (export-file.ts). Records hold
 * identifiers and numbers only: never key secrets, never request text.
 */
import { createHash } from 'node:crypto';

/** The hash the first record follows. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an admin action says about itself before it is chained. */
export interface AuditEvent {
  /** Who, as authenticated: `admin:<name>` (token, OpenID Connect or the CLI with a token), `bootstrap:<os user>`, `anonymous`. */
  readonly actor: string;
  /** What: a dotted verb such as `org.create`, `key.rotate`, `access.forbidden`. */
  readonly action: string;
  /** The object acted on: `org:<id>`, `key:<id>`, `usage`, `api:<operationId>`. */
  readonly target: string;
  /** Where from: the client address (trusted proxies resolved), or `cli:<os user>@<host>`. */
  readonly from: string;
  /** Changed settings as flat identifiers and numbers; never secrets or text. */
  readonly detail: Readonly<Record<string, string | number | boolean | null | readonly string[]>>;
}

/** A chained record before it is signed. */
export interface ChainedRecord extends AuditEvent {
  readonly seq: number;
  /** ISO-8601 time of the append, from Redis's clock (never earlier than the record before). */
  readonly at: string;
  readonly prevHash: string;
  readonly hash: string;
}

/** A record as stored and exported: chained and signed. */
export interface AuditRecord extends ChainedRecord {
  /** Ed25519 signature (base64url) of recordStatement(trail, seq, hash). */
  readonly sig: string;
}

export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/** The canonical bytes that are hashed: a fixed-order JSON array, detail keys sorted. */
export function canonical(record: Omit<ChainedRecord, 'hash'>): string {
  const detail = Object.fromEntries(Object.entries(record.detail).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify([record.seq, record.at, record.actor, record.action, record.target, record.from, detail, record.prevHash]);
}

/** SHA-256 (hex) of a record's canonical form, which includes the previous record's hash. */
export function hashOf(record: Omit<ChainedRecord, 'hash'>): string {
  return createHash('sha256').update(canonical(record)).digest('hex');
}

/** Chains `event` after `head` at time `at` (ms). */
export function chain(event: AuditEvent, head: ChainHead, at: number): ChainedRecord {
  const unhashed = { ...event, seq: head.seq + 1, at: new Date(at).toISOString(), prevHash: head.hash };
  return { ...unhashed, hash: hashOf(unhashed) };
}

/**
 * What a record's signature (and a checkpoint's, which is the same) signs: the trail (the Redis
 * key prefix, so a test trail's records cannot pass for production's), the seq and the hash.
 */
export function recordStatement(trail: string, seq: number, hash: string): Buffer {
  return Buffer.from(`ctg-audit-record-v2\n${trail}\n${seq}\n${hash}`);
}
