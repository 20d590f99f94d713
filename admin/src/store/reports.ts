/**
 * Usage reports (the CLI and the console): the usage stream (contract/usage-record.ts) and the
 * daily counters that the settlement functions (contract/redis/settlement.lua) write, read back
 * from under the settlement's secret namespace (read once; created like authz creates it when
 * admin comes first). Identifiers and counts only.
 */
import { fromPairs, type RedisConnection } from '../../../contract/redis-connection.js';
import { settlementKeys } from '../../../contract/redis/settlement-keys.js';
import { readSettlementNamespace } from '../../../contract/redis/settlement-namespace.js';
import { decodeDailyUsage, decodeUsage, type DailyUsage, type UsageEntry } from '../../../contract/usage-record.js';

export interface UsageQuery {
  readonly org?: string;
  readonly since?: number;
  readonly until?: number;
  /**
   * Skip stream entries Redis appended before this time (ms). An entry is appended after its
   * request started, so `since - clock skew` loses nothing and bounds the scan to the period.
   */
  readonly appendedFrom?: number;
}

const PAGE = 1000;
/** About how many entries a merge of every organization's stream holds at once. */
const MERGE_BUDGET = 20_000;

export class UsageReports {
  private settlement: ReturnType<typeof settlementKeys> | undefined;

  constructor(private readonly connection: RedisConnection) {}

  /** The settlement's key names, once the namespace is read. */
  private async keys(): Promise<ReturnType<typeof settlementKeys>> {
    if (this.settlement) return this.settlement;
    const ns = await readSettlementNamespace(this.connection);
    this.settlement = settlementKeys(this.connection.prefix, ns);
    return this.settlement;
  }

  /**
   * Usage entries in stream order, filtered by organization and time (ms, inclusive). Stream
   * ids carry Redis's clock but records carry the request's own start time, so without
   * `appendedFrom` the whole stream is paged through and filtered on the record's own time.
   * Each organization has its own stream (settlement-keys.ts): one organization's is read alone;
   * every organization's are found with SCAN (on every primary of a cluster) and merged in time
   * order (compareEntries).
   */
  async *readUsage(query: UsageQuery): AsyncGenerator<UsageEntry> {
    const keys = await this.keys();
    const streams =
      query.org !== undefined ? [keys.usageStream(query.org)] : await this.connection.scanAll(keys.usageStreamPattern, 'stream');
    const start = query.appendedFrom === undefined ? '-' : String(Math.max(0, Math.floor(query.appendedFrom)));
    // One page of each stream is held at once: smaller pages when there are many organizations.
    const size = Math.max(50, Math.min(PAGE, Math.floor(MERGE_BUDGET / Math.max(1, streams.length))));
    const heads = streams.map((stream) => this.pages(stream, start, size));
    const current = await Promise.all(heads.map((head) => head.next()));
    for (;;) {
      let min = -1;
      for (let i = 0; i < current.length; i++) {
        const here = current[i]!;
        if (here.done) continue;
        const best = current[min]?.value as [string, string[]] | undefined;
        if (!best || compareEntries({ id: here.value[0], stream: streams[i]! }, { id: best[0], stream: streams[min]! }) < 0) min = i;
      }
      if (min < 0) return;
      const [id, fields] = current[min]!.value as [string, string[]];
      current[min] = await heads[min]!.next();
      const entry = decodeUsage(id, fromPairs(fields));
      if (query.org !== undefined && entry.org !== query.org) continue;
      if (query.since !== undefined && entry.time < query.since) continue;
      if (query.until !== undefined && entry.time > query.until) continue;
      yield entry;
    }
  }

  /** One stream's entries from `start` on, a page at a time. */
  private async *pages(stream: string, from: string, size: number): AsyncGenerator<[string, string[]]> {
    const { redis } = this.connection;
    let start = from;
    for (;;) {
      const page = await this.connection.guard(() => redis.xrange(stream, start, '+', 'COUNT', size));
      yield* page;
      if (page.length < size) return;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  /** The organization's daily counters for each day given (empty days are omitted). */
  async readDaily(org: string, days: readonly string[]): Promise<Array<{ day: string; counters: DailyUsage }>> {
    const { redis } = this.connection;
    const keys = await this.keys();
    const hashes = await Promise.all(days.map((day) => this.connection.guard(() => redis.hgetall(keys.usageDaily(org, day)))));
    return days.flatMap((day, i) => (Object.keys(hashes[i]!).length > 0 ? [{ day, counters: decodeDailyUsage(hashes[i]!) }] : []));
  }

  /**
   * The newest use of each of `keyIds` (ms), reading the usage stream backwards and stopping
   * when every key is found or `maxEntries` entries were read (a key not found is older than
   * that, or never used): bounded work for a key list.
   */
  async lastUse(org: string, keyIds: readonly string[], maxEntries: number): Promise<Map<string, number>> {
    const { redis } = this.connection;
    const keys = await this.keys();
    const wanted = new Set(keyIds);
    const found = new Map<string, number>();
    let end = '+';
    for (let read = 0; read < maxEntries && found.size < wanted.size; ) {
      const page = await this.connection.guard(() => redis.xrevrange(keys.usageStream(org), end, '-', 'COUNT', PAGE));
      for (const [id, fields] of page) {
        const entry = decodeUsage(id, fromPairs(fields));
        if (entry.org === org && wanted.has(entry.keyId) && !found.has(entry.keyId)) found.set(entry.keyId, entry.time);
      }
      read += page.length;
      if (page.length < PAGE) break;
      end = `(${page[page.length - 1]![0]}`;
    }
    return found;
  }
}

/**
 * Orders two entries of the organizations' streams: by the millisecond of their ids (Redis's
 * clock), then by stream (ids of different streams in one millisecond say nothing of which came
 * first: each stream numbers its own), then by sequence.
 */
function compareEntries(a: { id: string; stream: string }, b: { id: string; stream: string }): number {
  const [am = 0, as = 0] = a.id.split('-').map(Number);
  const [bm = 0, bs = 0] = b.id.split('-').map(Number);
  return am - bm || (a.stream < b.stream ? -1 : a.stream > b.stream ? 1 : 0) || as - bs;
}
