/**
 * Writing and checking the audit trail: every admin operation calls `record` after its change
 * is stored. A record is chained with the audit secret's key, appended to Redis, then
 * checkpointed outside Redis (anchor.ts). A record that cannot be written or
 * checkpointed fails the operation's reply (the change itself is already made), so an operator
 * is never told "done" for an unaudited action.
 */
import type { AuditStore } from '../store/audit.js';
import type { AuditAnchor } from './anchor.js';
import {
  chain,
  GENESIS_HASH,
  verifyChain,
  type AuditEvent,
  type AuditKeys,
  type AuditRecord,
  type ChainHead,
  type Verdict,
} from './chain.js';

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
  };
}

export class AuditLog {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AuditStore,
    private readonly now: () => number,
    private readonly keys: AuditKeys,
    private readonly anchor: AuditAnchor,
  ) {}

  /** Chains and appends one event (after this process's earlier ones); returns the stored record. */
  record(event: AuditEvent): Promise<AuditRecord> {
    const appended = this.queue.then(() => this.append(event));
    this.queue = appended.catch(() => undefined);
    return appended;
  }

  private async append(event: AuditEvent): Promise<AuditRecord> {
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt += 1) {
      const head = await this.head();
      const record = chain(event, head, this.now(), this.keys.chain);
      if (await this.store.append(head.seq, record.seq, record.hash, encode(record))) {
        await this.anchor.checkpoint(record);
        return record;
      }
    }
    throw new Error('the audit chain is too busy to append to; try again');
  }

  /** The head as stored (seq 0 and the genesis hash before the first record). */
  async head(): Promise<ChainHead> {
    return (await this.store.head()) ?? { seq: 0, hash: GENESIS_HASH };
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
    if (!anchored.ok) return { ok: false, records: 0, head, checkpoints: 0, brokenAt: anchored.brokenAt, reason: anchored.reason };
    if (head.seq > 0 && anchored.anchors.latest === 0) {
      return {
        ok: false,
        records: 0,
        head,
        checkpoints: 0,
        brokenAt: 1,
        reason:
          'the checkpoint file holds no checkpoint of this trail, so a rollback cannot be ruled out (is AUDIT_ANCHOR_FILE the file the admin processes write?)',
      };
    }
    const store = this.store;
    async function* records(): AsyncGenerator<AuditRecord> {
      for await (const fields of store.readAll()) yield decode(fields);
    }
    return verifyChain(records(), head, this.keys.chain, anchored.anchors);
  }
}
