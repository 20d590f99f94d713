/**
 * Writing and checking the audit trail: every admin operation calls `record` after its change
 * is stored. A record that cannot be written fails the operation's reply (the change itself is
 * already made), so an operator is never told "done" for an unaudited action.
 */
import type { AuditStore } from '../store/audit.js';
import { chain, GENESIS_HASH, verifyChain, type AuditEvent, type AuditRecord, type ChainHead, type Verdict } from './audit-chain.js';

// Appends from this process are queued one after another, so attempts only race other
// processes (the CLI beside the admin server); each lost race means another append landed.
const APPEND_ATTEMPTS = 8;

/** The stream fields of a record (strings, detail as JSON). */
function encode(record: AuditRecord): Record<string, string> {
  return {
    seq: String(record.seq), at: record.at, actor: record.actor, action: record.action, target: record.target,
    from: record.from, detail: JSON.stringify(record.detail), prev_hash: record.prevHash, hash: record.hash,
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
    seq: Number(fields.seq ?? NaN), at: fields.at ?? '', actor: fields.actor ?? '', action: fields.action ?? '',
    target: fields.target ?? '', from: fields.from ?? '', detail, prevHash: fields.prev_hash ?? '', hash: fields.hash ?? '',
  };
}

export class AuditLog {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AuditStore,
    private readonly now: () => number,
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
      const record = chain(event, head, this.now());
      if (await this.store.append(head.seq, record.seq, record.hash, encode(record))) return record;
    }
    throw new Error('the audit chain is too busy to append to; try again');
  }

  /** The head as stored (seq 0 and the genesis hash before the first record). */
  async head(): Promise<ChainHead> {
    return (await this.store.head()) ?? { seq: 0, hash: GENESIS_HASH };
  }

  /** The `count` most recent records, newest first. */
  async recent(count: number): Promise<AuditRecord[]> {
    return (await this.store.recent(count)).map(decode);
  }

  /** Checks the whole chain against the stored head. */
  async verify(): Promise<Verdict> {
    const head = await this.head();
    const store = this.store;
    async function* records(): AsyncGenerator<AuditRecord> {
      for await (const fields of store.readAll()) yield decode(fields);
    }
    return verifyChain(records(), head);
  }
}
