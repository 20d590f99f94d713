/**
 * Writing and checking the audit trail. A change to the records is recorded before it is applied
 * (`journal`, through audit/journal.ts); a record of something else (a sign-in, a refusal, an
 * export) with `record`. A record is timed by Redis's clock (never earlier than the head's),
 * chained, signed with the trail's key, appended to Redis, then checkpointed outside Redis
 * (anchor.ts). A record that cannot be written or checkpointed fails the operation's reply, so
 * an operator is never told "done" for an unaudited action.
 */
import type { KeyObject } from 'node:crypto';
import type { AppendMode, AuditStore } from '../store/audit.js';
import type { AuditAnchor } from './anchor.js';
import { chain, GENESIS_HASH, recordStatement, type AuditEvent, type AuditRecord, type ChainHead } from './chain.js';
import type { AuditSigner } from './signing.js';
import { verifyChain, type Verdict } from './verify.js';

// Appends from this process are queued one after another, so attempts only race other
// processes (the CLI beside the admin server); each lost race means another append landed.
const APPEND_ATTEMPTS = 8;

/** The stream fields of a record (strings, detail as JSON). */
function encode(record: AuditRecord): Record<string, string> {
  return {
    seq: String(record.seq),
    at: record.at,
    actor: record.actor,
    action: record.action,
    target: record.target,
    from: record.from,
    detail: JSON.stringify(record.detail),
    prev_hash: record.prevHash,
    hash: record.hash,
    sig: record.sig,
  };
}

/** Stream fields back to a record; missing fields decode to values that fail verification. */
function decode(fields: Readonly<Record<string, string>>): AuditRecord {
  let detail: AuditRecord['detail'] = {};
  try {
    detail = JSON.parse(fields.detail ?? '{}') as AuditRecord['detail'];
  } catch {
    detail = { unreadable: fields.detail ?? '' };
  }
  return {
    seq: Number(fields.seq ?? NaN),
    at: fields.at ?? '',
    actor: fields.actor ?? '',
    action: fields.action ?? '',
    target: fields.target ?? '',
    from: fields.from ?? '',
    detail,
    prevHash: fields.prev_hash ?? '',
    hash: fields.hash ?? '',
    sig: fields.sig ?? '',
  };
}

export class AuditLog {
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * @param trail the trail's name (the Redis key prefix), signed into every record
   */
  constructor(
    private readonly store: AuditStore,
    readonly trail: string,
    private readonly signer: AuditSigner,
    private readonly anchor: AuditAnchor,
  ) {}

  /** The public key that verifies this trail's signatures. */
  get publicKey(): KeyObject {
    return this.signer.publicKey;
  }

  /** Signs `statement` with the trail's key (an export's manifest). */
  sign(statement: Buffer): string {
    return this.signer.sign(statement);
  }

  /** Chains and appends one event (after this process's earlier ones); returns the stored record. */
  async record(event: AuditEvent): Promise<AuditRecord> {
    return (await this.enqueue(event, { mode: 'plain' })) as AuditRecord;
  }

  /**
   * Appends the record of a change about to be applied with its journal entry (JSON with the
   * `entities` it changes), atomically; 'busy' (nothing appended) while a change to one of those
   * entities is not yet applied.
   */
  async journal(event: AuditEvent, entry: string): Promise<AuditRecord | 'busy'> {
    return (await this.enqueue(event, { mode: 'journal', entry })) as AuditRecord | 'busy';
  }

  /** Appends the record that the journalled change `seq` was not applied, closing it; null when it was closed already. */
  async recordFailure(event: AuditEvent, seq: number): Promise<AuditRecord | null> {
    const result = await this.enqueue(event, { mode: 'failed', seq });
    return result === 'resolved' ? null : (result as AuditRecord);
  }

  private enqueue(event: AuditEvent, how: AppendMode): Promise<AuditRecord | 'busy' | 'resolved'> {
    const appended = this.queue.then(() => this.append(event, how));
    this.queue = appended.catch(() => undefined);
    return appended;
  }

  private async append(event: AuditEvent, how: AppendMode): Promise<AuditRecord | 'busy' | 'resolved'> {
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt += 1) {
      const { head, now } = await this.store.headAndTime();
      const after = head ?? { seq: 0, hash: GENESIS_HASH, atMs: 0 };
      // Redis's clock, and never before the record this one follows.
      const atMs = Math.max(now, after.atMs);
      const chained = chain(event, after, atMs);
      const record: AuditRecord = { ...chained, sig: this.signer.sign(recordStatement(this.trail, chained.seq, chained.hash)) };
      const result = await this.store.append(after.seq, { seq: record.seq, hash: record.hash, atMs, sig: record.sig }, encode(record), how);
      if (result === 'busy' || result === 'resolved') return result;
      if (result === 'appended') {
        await this.anchor.checkpoint(record);
        return record;
      }
    }
    throw new Error('the audit chain is too busy to append to; try again');
  }

  /** How many journalled changes are open (recorded, not yet known to be applied). */
  openChanges(): Promise<number> {
    return this.store.openChanges();
  }

  /** The open journal entries (JSON), by seq, oldest first. */
  openEntries(): Promise<Map<number, string>> {
    return this.store.journal();
  }

  /** Closes the journal entry of the applied change `seq`. */
  async closeChange(seq: number): Promise<void> {
    await this.store.close(seq);
  }

  /** The head as stored (seq 0 and the genesis hash before the first record). */
  async head(): Promise<ChainHead> {
    const { head } = await this.store.headAndTime();
    return head ? { seq: head.seq, hash: head.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  /** Every record, newest first (streamed). */
  async *newestFirst(): AsyncGenerator<AuditRecord> {
    for await (const fields of this.store.readBackwards()) yield decode(fields);
  }

  /** Every record, oldest first (streamed). */
  async *oldestFirst(): AsyncGenerator<AuditRecord> {
    for await (const fields of this.store.readAll()) yield decode(fields);
  }

  /** The `count` most recent records, newest first. */
  async recent(count: number): Promise<AuditRecord[]> {
    return (await this.store.recent(count)).map(decode);
  }

  /**
   * Checks the whole chain against the stored head and the checkpoints outside Redis. The
   * checkpoints are read first: each was written after its record, so the head read next is at
   * least as far along, and a later checkpoint beyond the chain can only mean a rollback.
   */
  async verify(): Promise<Verdict> {
    const anchored = await this.anchor.read();
    const head = await this.head();
    const broken = (reason: string, brokenAt: number): Verdict => ({ ok: false, records: 0, head, checkpoints: 0, brokenAt, reason });
    if (!anchored.ok) return broken(anchored.reason, 0);
    if (head.seq > 0 && anchored.checkpoints.length === 0)
      return broken(
        'the checkpoint file holds no checkpoint of this trail, so a rollback cannot be ruled out (is AUDIT_ANCHOR_FILE the file the admin processes write?)',
        1,
      );
    return verifyChain(() => this.oldestFirst(), {
      trail: this.trail,
      keys: [this.signer.publicKey],
      head,
      checkpoints: anchored.checkpoints,
    });
  }
}
