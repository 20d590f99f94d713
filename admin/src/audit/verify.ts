/**
 * Checking a whole trail as stored (oldest first) against its stored head and the signed
 * checkpoints kept outside it. Every record's hash is recomputed (SHA-256, nothing secret) and
 * linked to the one before; the head's signature then vouches for the whole chain, so only it
 * and the checkpoints that disagree with the chain need a signature check (an Ed25519 check costs
 * far more than a hash). A chain whose head is not signed is walked again to name the first
 * record that is not.
 */
import type { KeyObject } from 'node:crypto';
import type { Checkpoint } from './anchor.js';
import { GENESIS_HASH, hashOf, recordStatement, type AuditRecord, type ChainHead } from './chain.js';
import { signedBy } from './signing.js';

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

/** What the chain is checked against. */
export interface Expectation {
  /** The trail's name (its Redis key prefix): part of every signed statement. */
  readonly trail: string;
  /** The keys whose signatures count (the trail's public key; more while one is being replaced). */
  readonly keys: readonly KeyObject[];
  /** The head the chain must end at. */
  readonly head: ChainHead;
  /** Signed claims from outside the trail: seq → the hash it had. */
  readonly checkpoints: readonly Checkpoint[];
}

type Records = () => AsyncIterable<AuditRecord>;
type Broken = { brokenAt: number; reason: string };

/** Walks `records()` and reports the first fault, or ok; see the module comment. */
export async function verifyChain(records: Records, expected: Expectation): Promise<Verdict> {
  const claims = groupBySeq(expected.checkpoints);
  const signed = (c: { seq: number; hash: string; sig: string }) =>
    signedBy(expected.keys, recordStatement(expected.trail, c.seq, c.hash), c.sig);
  const { head } = expected;
  let previous: ChainHead = { seq: 0, hash: GENESIS_HASH };
  let last: AuditRecord | null = null;
  let count = 0;
  const verdict = (fault: Broken | null): Verdict =>
    fault
      ? { ok: false, records: count, head, checkpoints: expected.checkpoints.length, ...fault }
      : { ok: true, records: count, head, checkpoints: expected.checkpoints.length };
  for await (const record of records()) {
    // Records appended after the head was read are checked on the next run.
    if (previous.seq === head.seq && previous.hash === head.hash && head.seq > 0) break;
    count += 1;
    const fault = linkFault(record, previous) ?? claimFault(record, claims.get(record.seq), signed);
    if (fault) return verdict(fault);
    previous = { seq: record.seq, hash: record.hash };
    last = record;
  }
  if (previous.seq !== head.seq || previous.hash !== head.hash)
    return verdict({
      brokenAt: previous.seq + 1,
      reason: `the chain ends at record ${previous.seq} but its stored head is record ${head.seq}: records were removed or the head was changed`,
    });
  if (last && !signed(last)) return verdict(await firstUnsigned(records, signed));
  return verdict(beyondFault(previous.seq, expected.checkpoints, signed));
}

/** The fault of `record` following `previous`: a gap, a broken link, or content changed since hashing. */
export function linkFault(record: AuditRecord, previous: ChainHead): Broken | null {
  if (record.seq !== previous.seq + 1)
    return { brokenAt: previous.seq + 1, reason: `record ${previous.seq + 1} is missing (next found is ${record.seq})` };
  if (record.prevHash !== previous.hash)
    return { brokenAt: record.seq, reason: `record ${record.seq} does not follow record ${previous.seq}` };
  const { hash, sig: _sig, ...unhashed } = record;
  if (hashOf(unhashed) !== hash) return { brokenAt: record.seq, reason: `record ${record.seq} was changed after it was written` };
  return null;
}

function claimFault(record: AuditRecord, claims: readonly Checkpoint[] | undefined, signed: (c: Checkpoint) => boolean): Broken | null {
  for (const claim of claims ?? []) {
    // A claim identical to the record is as good as the record, which the head vouches for.
    if (claim.hash === record.hash && claim.sig === record.sig) continue;
    if (!signed(claim)) return { brokenAt: record.seq, reason: `${claim.source} is not signed with the trail's key (a forged checkpoint)` };
    if (claim.hash !== record.hash)
      return {
        brokenAt: record.seq,
        reason: `record ${record.seq} is not the one ${claim.source} signed: the trail was rolled back or replaced`,
      };
  }
  return null;
}

// A signed checkpoint beyond the chain's end means the trail was cut or rolled back.
function beyondFault(end: number, checkpoints: readonly Checkpoint[], signed: (c: Checkpoint) => boolean): Broken | null {
  const beyond = checkpoints.filter((c) => c.seq > end).sort((a, b) => b.seq - a.seq);
  for (const claim of beyond) {
    if (!signed(claim)) return { brokenAt: claim.seq, reason: `${claim.source} is not signed with the trail's key (a forged checkpoint)` };
    return {
      brokenAt: end + 1,
      reason: `${claim.source} signed record ${claim.seq} but the chain ends at record ${end}: the trail was cut short or rolled back`,
    };
  }
  return null;
}

async function firstUnsigned(records: Records, signed: (r: AuditRecord) => boolean): Promise<Broken> {
  for await (const record of records()) {
    if (!signed(record))
      return {
        brokenAt: record.seq,
        reason: `record ${record.seq} is not signed with the trail's key: it was written or re-hashed by someone without it`,
      };
  }
  return { brokenAt: 1, reason: "the chain's head is not signed with the trail's key" };
}

function groupBySeq(checkpoints: readonly Checkpoint[]): Map<number, Checkpoint[]> {
  const bySeq = new Map<number, Checkpoint[]>();
  for (const c of checkpoints) bySeq.set(c.seq, [...(bySeq.get(c.seq) ?? []), c]);
  return bySeq;
}
