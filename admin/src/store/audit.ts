/**
 * The audit trail's storage: an append-only Redis stream `<prefix>audit`, plus the chain head
 * `<prefix>audit:head` {seq, hash}. Appends are compare-and-set on the head (append-audit.lua),
 * so two admins acting at once still produce one unbroken chain. The store keeps fields as
 * given; audit/log.ts owns what they mean.
 */
import { fromPairs } from '../../../contract/redis-connection.js';
import type { Connection } from './connection.js';

type Fields = Readonly<Record<string, string>>;
const PAGE = 1000;

export class AuditStore {
  private readonly keys: { readonly auditStream: string; readonly auditHead: string };

  constructor(private readonly connection: Connection) {
    this.keys = { auditStream: `${connection.prefix}audit`, auditHead: `${connection.prefix}audit:head` };
  }

  /** The chain head: the last record's seq and hash, or null before the first record. */
  async head(): Promise<{ seq: number; hash: string } | null> {
    const { redis } = this.connection;
    const { keys } = this;
    const head = await this.connection.guard(() => redis.hgetall(keys.auditHead));
    return head.seq && head.hash ? { seq: Number(head.seq), hash: head.hash } : null;
  }

  /** Appends a record if the head is still `afterSeq`; false when another append won the race. */
  async append(afterSeq: number, seq: number, hash: string, fields: Fields): Promise<boolean> {
    const { redis } = this.connection;
    const { keys } = this;
    const pairs = Object.entries(fields).flat();
    const id = await this.connection.guard(() =>
      redis.appendAudit(keys.auditStream, keys.auditHead, String(afterSeq), String(seq), hash, ...pairs),
    );
    return id !== null;
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
