/**
 * The audit trail's storage: an append-only Redis stream `<prefix>audit`, plus the chain head
 * `<prefix>audit:head` {seq, hash, at_ms, sig}. Appends are compare-and-set on the head
 * (append-audit.lua), so two admins acting at once still produce one unbroken chain, and the
 * script refuses a time not taken from Redis's clock. The store keeps fields as given;
 * audit/log.ts owns what they mean.
 */
import { fromPairs } from '../../../contract/redis-connection.js';
import type { Connection } from './connection.js';

type Fields = Readonly<Record<string, string>>;
const PAGE = 1000;

/** The chain head as stored, with Redis's clock read in the same round trip. */
export interface StoredHead {
  readonly seq: number;
  readonly hash: string;
  /** The head record's time (ms), 0 before the first record. */
  readonly atMs: number;
  readonly sig: string;
}

/** What an append did: stored, or refused because the head moved or the time is not Redis's. */
export type AppendResult = 'appended' | 'moved' | 'stale';

export class AuditStore {
  private readonly keys: { readonly auditStream: string; readonly auditHead: string };

  constructor(private readonly connection: Connection) {
    this.keys = { auditStream: `${connection.prefix}audit`, auditHead: `${connection.prefix}audit:head` };
  }

  /** The chain head (null before the first record) and Redis's time (ms), read together. */
  async headAndTime(): Promise<{ head: StoredHead | null; now: number }> {
    const { redis } = this.connection;
    const [[, head], [, time]] = (await this.connection.guard(() => redis.multi().hgetall(this.keys.auditHead).time().exec())) as [
      [unknown, Record<string, string>],
      [unknown, [string, string]],
    ];
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    if (!head.seq || !head.hash) return { head: null, now };
    return { head: { seq: Number(head.seq), hash: head.hash, atMs: Number(head.at_ms ?? 0), sig: head.sig ?? '' }, now };
  }

  /** Appends a record if the head is still `afterSeq` and `atMs` is Redis's time; see AppendResult. */
  async append(afterSeq: number, record: { seq: number; hash: string; atMs: number; sig: string }, fields: Fields): Promise<AppendResult> {
    const { redis } = this.connection;
    const { keys } = this;
    const pairs = Object.entries(fields).flat();
    const result = await this.connection.guard(() =>
      redis.appendAudit(
        keys.auditStream,
        keys.auditHead,
        String(afterSeq),
        String(record.seq),
        record.hash,
        String(record.atMs),
        record.sig,
        ...pairs,
      ),
    );
    return result === 'moved' || result === 'stale' ? result : 'appended';
  }

  /** Every record, oldest first, a page at a time. */
  async *readAll(): AsyncGenerator<Fields> {
    const { redis } = this.connection;
    const { keys } = this;
    let start = '-';
    for (;;) {
      const page = await this.connection.guard(() => redis.xrange(keys.auditStream, start, '+', 'COUNT', PAGE));
      for (const [, fields] of page) yield fromPairs(fields);
      if (page.length < PAGE) return;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  /** Every record, newest first, a page at a time. */
  async *readBackwards(): AsyncGenerator<Fields> {
    const { redis } = this.connection;
    const { keys } = this;
    let end = '+';
    for (;;) {
      const page = await this.connection.guard(() => redis.xrevrange(keys.auditStream, end, '-', 'COUNT', PAGE));
      for (const [, fields] of page) yield fromPairs(fields);
      if (page.length < PAGE) return;
      end = `(${page[page.length - 1]![0]}`;
    }
  }

  /** The `count` most recent records, newest first. */
  async recent(count: number): Promise<Fields[]> {
    const { redis } = this.connection;
    const { keys } = this;
    const page = await this.connection.guard(() => redis.xrevrange(keys.auditStream, '+', '-', 'COUNT', count));
    return page.map(([, fields]) => fromPairs(fields));
  }
}
