/**
 * The audit trail's storage: an append-only Redis stream `<prefix>{audit}`, the chain head
 * `<prefix>{audit}:head` {seq, hash, at_ms, sig}, and the journal of changes recorded but not
 * yet applied (`<prefix>{audit}:journal`: seq -> entry; `<prefix>{audit}:busy`: entity key ->
 * seq). One hash tag, so on a Redis Cluster every append is one slot, atomic. Appends are
 * compare-and-set on the head (append-audit.lua), so two admins acting at once still produce one
 * unbroken chain, and the script refuses a time not taken from Redis's clock. The store keeps
 * fields as given; audit/log.ts owns what they mean, audit/journal.ts what the journal means.
 */
import { fromPairs } from '../../../contract/redis-connection.js';
import type { Connection } from './connection.js';

type Fields = Readonly<Record<string, string>>;
const PAGE = 1000;

/** The audit trail's keys under `prefix` (one hash tag: one slot of a Redis Cluster). */
export function auditKeys(prefix: string) {
  return {
    stream: `${prefix}{audit}`,
    head: `${prefix}{audit}:head`,
    journal: `${prefix}{audit}:journal`,
    busy: `${prefix}{audit}:busy`,
  };
}

/** The chain head as stored, with Redis's clock read in the same round trip. */
export interface StoredHead {
  readonly seq: number;
  readonly hash: string;
  /** The head record's time (ms), 0 before the first record. */
  readonly atMs: number;
  readonly sig: string;
}

/**
 * What an append did: stored; refused because the head moved or the time is not Redis's; a
 * journalled change refused while another to one of its entities is unapplied (`busy`); a
 * failure record not written because the change was closed already (`resolved`).
 */
export type AppendResult = 'appended' | 'moved' | 'stale' | 'busy' | 'resolved';

/** How a record is appended: alone, opening a journal entry (its JSON), or closing one as failed (its seq). */
export type AppendMode =
  | { readonly mode: 'plain' }
  | { readonly mode: 'journal'; readonly entry: string }
  | { readonly mode: 'failed'; readonly seq: number };

export class AuditStore {
  private readonly keys: ReturnType<typeof auditKeys>;
  private moved: Promise<void> | null = null;

  constructor(private readonly connection: Connection) {
    this.keys = auditKeys(connection.prefix);
  }

  /**
   * Once per process: a trail kept under the old keys (`<prefix>audit`, `<prefix>audit:head`)
   * is renamed to the tagged ones. Not on a cluster: it starts empty (docs/settlement.md).
   */
  private layout(): Promise<void> {
    if (this.connection.clustered) return Promise.resolve();
    this.moved ??= (async () => {
      const { redis, prefix } = this.connection;
      const { keys } = this;
      await this.connection.guard(() => redis.migrateAudit(`${prefix}audit`, `${prefix}audit:head`, keys.stream, keys.head));
    })().catch((error: unknown) => {
      this.moved = null;
      throw error;
    });
    return this.moved;
  }

  /** The chain head (null before the first record) and Redis's time (ms), read together. */
  async headAndTime(): Promise<{ head: StoredHead | null; now: number }> {
    await this.layout();
    const { redis } = this.connection;
    const [[, head], [, time]] = (await this.connection.guard(() => redis.multi().hgetall(this.keys.head).time().exec())) as [
      [unknown, Record<string, string>],
      [unknown, [string, string]],
    ];
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    if (!head.seq || !head.hash) return { head: null, now };
    return { head: { seq: Number(head.seq), hash: head.hash, atMs: Number(head.at_ms ?? 0), sig: head.sig ?? '' }, now };
  }

  /** Appends a record if the head is still `afterSeq` and `atMs` is Redis's time; see AppendResult and AppendMode. */
  async append(
    afterSeq: number,
    record: { seq: number; hash: string; atMs: number; sig: string },
    fields: Fields,
    how: AppendMode = { mode: 'plain' },
  ): Promise<AppendResult> {
    await this.layout();
    const { redis } = this.connection;
    const { keys } = this;
    const pairs = Object.entries(fields).flat();
    const arg = how.mode === 'journal' ? how.entry : how.mode === 'failed' ? String(how.seq) : '';
    const result = await this.connection.guard(() =>
      redis.appendAudit(
        keys.stream,
        keys.head,
        keys.journal,
        keys.busy,
        String(afterSeq),
        String(record.seq),
        record.hash,
        String(record.atMs),
        record.sig,
        how.mode,
        arg,
        ...pairs,
      ),
    );
    return result === 'moved' || result === 'stale' || result === 'busy' || result === 'resolved' ? result : 'appended';
  }

  /** The journal: every change recorded but not yet applied (or not yet known to be), by seq. */
  async journal(): Promise<Map<number, string>> {
    await this.layout();
    const { redis } = this.connection;
    const entries = await this.connection.guard(() => redis.hgetall(this.keys.journal));
    return new Map(
      Object.entries(entries)
        .map(([seq, entry]) => [Number(seq), entry] as const)
        .sort(([a], [b]) => a - b),
    );
  }

  /** How many journalled changes are open (0 almost always: one cheap read before each change). */
  async openChanges(): Promise<number> {
    await this.layout();
    const { redis } = this.connection;
    return this.connection.guard(() => redis.hlen(this.keys.journal));
  }

  /** Closes the journal entry of an applied change; false when it was closed already. */
  async close(seq: number): Promise<boolean> {
    const { redis } = this.connection;
    const { keys } = this;
    return (await this.connection.guard(() => redis.closeChange(keys.journal, keys.busy, String(seq)))) === 1;
  }

  /** Every record, oldest first, a page at a time. */
  async *readAll(): AsyncGenerator<Fields> {
    await this.layout();
    const { redis } = this.connection;
    const { keys } = this;
    let start = '-';
    for (;;) {
      const page = await this.connection.guard(() => redis.xrange(keys.stream, start, '+', 'COUNT', PAGE));
      for (const [, fields] of page) yield fromPairs(fields);
      if (page.length < PAGE) return;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  /** Every record, newest first, a page at a time. */
  async *readBackwards(): AsyncGenerator<Fields> {
    await this.layout();
    const { redis } = this.connection;
    const { keys } = this;
    let end = '+';
    for (;;) {
      const page = await this.connection.guard(() => redis.xrevrange(keys.stream, end, '-', 'COUNT', PAGE));
      for (const [, fields] of page) yield fromPairs(fields);
      if (page.length < PAGE) return;
      end = `(${page[page.length - 1]![0]}`;
    }
  }

  /** The `count` most recent records, newest first. */
  async recent(count: number): Promise<Fields[]> {
    await this.layout();
    const { redis } = this.connection;
    const { keys } = this;
    const page = await this.connection.guard(() => redis.xrevrange(keys.stream, '+', '-', 'COUNT', count));
    return page.map(([, fields]) => fromPairs(fields));
  }
}
