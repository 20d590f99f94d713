/**
 * The audit trail's hash chain, pure: each record's hash is an HMAC-SHA-256, under a key derived
 * from the audit secret (which is never in Redis), over its canonical form and the previous
 * record's hash. Someone who can write to Redis but does not hold the secret cannot change,
 * insert or re-hash a record without breaking the chain; checkpoints kept outside Redis
 * (anchor.ts) catch a trail cut short or rolled back to an older copy. Records hold
 * identifiers and numbers only: never key secrets, never request text.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The hash the first record follows. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an admin action says about itself before it is chained. */
export interface AuditEvent {
  /** Who, as authenticated: `admin:<name>` (token or OpenID Connect), `cli:<os user>`, `anonymous`. */
  readonly actor: string;
  /** What: a dotted verb such as `org.create`, `key.rotate`. */
  readonly action: string;
  /** The object acted on: `org:<id>`, `key:<id>`, `usage`. */
  readonly target: string;
  /** Where from: the client address (trusted proxies resolved), or `cli@<host>`. */
  readonly from: string;
  /** Changed settings as flat identifiers and numbers; never secrets or text. */
  readonly detail: Readonly<Record<string, string | number | boolean | null | readonly string[]>>;
}

export interface AuditRecord extends AuditEvent {
  readonly seq: number;
  /** ISO-8601 time of the action. */
  readonly at: string;
  readonly prevHash: string;
  readonly hash: string;
}

export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/** The keys derived from the audit secret: one chains records, one signs checkpoints. */
export interface AuditKeys {
  readonly chain: Buffer;
  readonly checkpoint: Buffer;
}

/** Derives the chain and checkpoint keys from the audit secret (distinct keys, one secret). */
export function auditKeys(secret: string): AuditKeys {
  const derive = (label: string) => createHmac('sha256', secret).update(label).digest();
  return { chain: derive('ctg-audit-chain-v1'), checkpoint: derive('ctg-audit-checkpoint-v1') };
}

/** The canonical bytes that are hashed: a fixed-order JSON array, detail keys sorted. */
export function canonical(record: Omit<AuditRecord, 'hash'>): string {
  const detail = Object.fromEntries(Object.entries(record.detail).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify([record.seq, record.at, record.actor, record.action, record.target, record.from, detail, record.prevHash]);
}

/** HMAC-SHA-256 (hex) of a record's canonical form, which includes the previous record's hash. */
function hashOf(record: Omit<AuditRecord, 'hash'>, key: Buffer): string {
  return createHmac('sha256', key).update(canonical(record)).digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameDigest(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** Chains `event` after `head` at time `at` (ms). */
export function chain(event: AuditEvent, head: ChainHead, at: number, key: Buffer): AuditRecord {
  const unhashed = { ...event, seq: head.seq + 1, at: new Date(at).toISOString(), prevHash: head.hash };
  return { ...unhashed, hash: hashOf(unhashed, key) };
}

export type Verdict =
  | { readonly ok: true; readonly records: number; readonly head: ChainHead; readonly checkpoints: number }
  | {
      readonly ok: false;
      readonly records: number;
      readonly head: ChainHead;
      readonly checkpoints: number;
      readonly brokenAt: number;
      readonly reason: string;
    };

/** Signed checkpoints read from outside Redis: seq → hash the chain had there. */
export interface Anchors {
  readonly bySeq: ReadonlyMap<number, string>;
  /** The highest checkpointed seq (0 when none). */
  readonly latest: number;
}

const NO_ANCHORS: Anchors = { bySeq: new Map(), latest: 0 };

/**
 * Walks the chain in order (streamed) and reports the first record that does not follow, is
 * not keyed with the audit secret, or differs from a checkpoint; then that the chain reaches
 * its stored head and every checkpoint (a shorter chain was cut or rolled back).
 */
export async function verifyChain(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
  storedHead: ChainHead,
  key: Buffer,
  anchors: Anchors = NO_ANCHORS,
): Promise<Verdict> {
  let previous: ChainHead = { seq: 0, hash: GENESIS_HASH };
  let count = 0;
  const checkpoints = anchors.bySeq.size;
  const broken = (brokenAt: number, reason: string): Verdict => ({
    ok: false,
    records: count,
    head: storedHead,
    checkpoints,
    brokenAt,
    reason,
  });
  for await (const record of records) {
    // Records appended after the head was read are checked on the next run.
    if (previous.seq === storedHead.seq && previous.hash === storedHead.hash && storedHead.seq > 0) break;
    count += 1;
    if (record.seq !== previous.seq + 1)
      return broken(previous.seq + 1, `record ${previous.seq + 1} is missing (next found is ${record.seq})`);
    if (record.prevHash !== previous.hash) return broken(record.seq, `record ${record.seq} does not follow record ${previous.seq}`);
    const { hash, ...unhashed } = record;
    if (!sameDigest(hashOf(unhashed, key), hash))
      return broken(record.seq, `record ${record.seq} was changed after it was written (its hash is not keyed with the audit secret)`);
    const anchored = anchors.bySeq.get(record.seq);
    if (anchored !== undefined && anchored !== hash)
      return broken(record.seq, `record ${record.seq} is not the one its checkpoint signed: the trail was rolled back or replaced`);
    previous = { seq: record.seq, hash };
  }
  if (previous.seq !== storedHead.seq || previous.hash !== storedHead.hash) {
    return broken(
      previous.seq + 1,
      `the chain ends at record ${previous.seq} but its stored head is record ${storedHead.seq}: records were removed or the head was changed`,
    );
  }
  if (anchors.latest > previous.seq) {
    return broken(
      previous.seq + 1,
      `a checkpoint signed record ${anchors.latest} but the chain ends at record ${previous.seq}: the trail was cut short or rolled back`,
    );
  }
  return { ok: true, records: count, head: storedHead, checkpoints };
}
