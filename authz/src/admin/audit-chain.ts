/**
 * The audit trail's hash chain, pure: each record's hash is SHA-256 over its canonical form
 * and the previous record's hash, so changing or deleting a record breaks every hash after it,
 * and the stored head (last seq and hash) catches a deleted tail. Records hold identifiers and
 * numbers only: never key secrets, never request text.
 */
import { createHash } from 'node:crypto';

/** The hash the first record follows. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an admin action says about itself before it is chained. */
export interface AuditEvent {
  /** Who: `token:<name>`, `sso:<user>`, `cli:<os user>`. */
  readonly actor: string;
  /** What: a dotted verb such as `org.create`, `key.rotate`. */
  readonly action: string;
  /** The object acted on: `org:<id>`, `key:<id>`, `usage`. */
  readonly target: string;
  /** Where from: the client address, or `cli@<host>`. */
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

/** The canonical bytes that are hashed: a fixed-order JSON array, detail keys sorted. */
export function canonical(record: Omit<AuditRecord, 'hash'>): string {
  const detail = Object.fromEntries(Object.entries(record.detail).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify([record.seq, record.at, record.actor, record.action, record.target, record.from, detail, record.prevHash]);
}

/** SHA-256 (hex) of a record's canonical form, which includes the previous record's hash. */
export function hashOf(record: Omit<AuditRecord, 'hash'>): string {
  return createHash('sha256').update(canonical(record)).digest('hex');
}

/** Chains `event` after `head` at time `at` (ms). */
export function chain(event: AuditEvent, head: ChainHead, at: number): AuditRecord {
  const unhashed = { ...event, seq: head.seq + 1, at: new Date(at).toISOString(), prevHash: head.hash };
  return { ...unhashed, hash: hashOf(unhashed) };
}

export type Verdict =
  | { readonly ok: true; readonly records: number; readonly head: ChainHead }
  | { readonly ok: false; readonly records: number; readonly head: ChainHead; readonly brokenAt: number; readonly reason: string };

/** Walks the chain in order (streamed) and reports the first record that does not follow. */
export async function verifyChain(records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>, storedHead: ChainHead): Promise<Verdict> {
  let previous: ChainHead = { seq: 0, hash: GENESIS_HASH };
  let count = 0;
  const broken = (brokenAt: number, reason: string): Verdict => ({ ok: false, records: count, head: storedHead, brokenAt, reason });
  for await (const record of records) {
    // Records appended after the head was read are checked on the next run.
    if (previous.seq === storedHead.seq && previous.hash === storedHead.hash && storedHead.seq > 0) break;
    count += 1;
    if (record.seq !== previous.seq + 1) return broken(previous.seq + 1, `record ${previous.seq + 1} is missing (next found is ${record.seq})`);
    if (record.prevHash !== previous.hash) return broken(record.seq, `record ${record.seq} does not follow record ${previous.seq}`);
    const { hash, ...unhashed } = record;
    if (hashOf(unhashed) !== hash) return broken(record.seq, `record ${record.seq} was changed after it was written`);
    previous = { seq: record.seq, hash };
  }
  if (previous.seq !== storedHead.seq || previous.hash !== storedHead.hash) {
    return broken(previous.seq + 1, `the chain ends at record ${previous.seq} but its stored head is record ${storedHead.seq}: records were removed or the head was changed`);
  }
  return { ok: true, records: count, head: storedHead };
}

