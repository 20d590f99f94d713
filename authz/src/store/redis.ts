/**
 * The Redis store: the only module that imports ioredis. Its Lua scripts live beside it and
 * are registered once per connection with defineCommand. Every command is bounded: a command
 * timeout, no offline queue and no retries, so an unreachable or slow Redis fails within
 * REDIS_TIMEOUT_MS with StoreUnavailableError instead of queueing or hanging.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { openRedis, type RedisTarget } from './connection.js';
import type { KeyRecord, OrgRecord } from '../policy/access.js';
import { PERIOD_MS, type LimitOutcome, type LimitReason, type Limits } from '../policy/limits.js';
import { decodeKey, decodeOrg, decodeUsage, encodeKey, encodeOrg, fromPairs, layout, utcDay, type Layout, type UsageEntry, type UsageRecord } from './records.js';

export interface StoreOptions extends RedisTarget {
  readonly prefix: string;
  readonly timeoutMs: number;
}

/** Redis could not answer in time (unreachable, slow, or the connection dropped). */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`redis unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}


export interface UsageQuery {
  readonly org?: string;
  readonly since?: number;
  readonly until?: number;
}

interface Scripts {
  lookupKey(key: string, prefix: string): Promise<[string[], string[]]>;
  checkLimits(requests: string, tokens: string, now: number, rpm: number, tpm: number, period: number): Promise<number[]>;
  recordUsage(stream: string, daily: string, tokens: string, org: string, ...args: Array<string | number>): Promise<number>;
}

const script = (name: string): string => readFileSync(new URL(`./${name}.lua`, import.meta.url), 'utf8');
const REASONS: readonly LimitReason[] = ['none', 'requests', 'tokens'];

/** Opens a store; it connects in the background and reconnects by itself. */
export function createStore(options: StoreOptions): RedisStore {
  return new RedisStore(options);
}

export class RedisStore {
  readonly keys: Layout;
  private readonly redis: Redis & Scripts;
  private readonly timeoutMs: number;

  constructor(options: StoreOptions) {
    this.keys = layout(options.prefix);
    this.timeoutMs = options.timeoutMs;
    const redis = openRedis(options, {
      commandTimeout: options.timeoutMs,
      connectTimeout: Math.max(1000, options.timeoutMs),
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: (times) => Math.min(50 * times, 1000),
    });
    // Connection errors surface through the commands that fail; the event needs a listener
    // only so ioredis does not print them.
    redis.on('error', () => {});
    redis.defineCommand('lookupKey', { numberOfKeys: 1, lua: script('lookup-key') });
    redis.defineCommand('checkLimits', { numberOfKeys: 2, lua: script('check-limits') });
    redis.defineCommand('recordUsage', { numberOfKeys: 4, lua: script('record-usage') });
    this.redis = redis as Redis & Scripts;
  }

  /** True while the connection is up. */
  isReady(): boolean {
    return this.redis.status === 'ready';
  }

  /** Calls `listener` when the connection comes up or goes down; returns the unsubscriber. */
  onReadyChange(listener: (ready: boolean) => void): () => void {
    const up = (): void => listener(true);
    const down = (): void => listener(false);
    this.redis.on('ready', up).on('close', down);
    return () => void this.redis.off('ready', up).off('close', down);
  }

  /** Resolves once connected; rejects with StoreUnavailableError after `waitMs`. */
  async ready(waitMs = Math.max(2000, this.timeoutMs * 4)): Promise<void> {
    if (this.isReady()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new StoreUnavailableError(`not connected after ${waitMs} ms`));
      }, waitMs);
      const unsubscribe = this.onReadyChange((ready) => {
        if (!ready) return;
        clearTimeout(timer);
        unsubscribe();
        resolve();
      });
    });
  }

  /** The key record for `id` and its organization's record, in one round trip. */
  async lookupKey(id: string): Promise<{ key: KeyRecord | null; org: OrgRecord | null }> {
    const [key, org] = await this.guard(() => this.redis.lookupKey(this.keys.key(id), this.keys.prefix));
    return { key: decodeKey(fromPairs(key)), org: decodeOrg(fromPairs(org)) };
  }

  /** Runs one Check's rate limit (check-limits.lua): one atomic round trip. */
  async checkLimits(org: string, model: string, now: number, limits: Limits): Promise<LimitOutcome> {
    const reply = await this.guard(() =>
      this.redis.checkLimits(this.keys.requestBucket(org, model), this.keys.tokenBucket(org, model), now, limits.rpm, limits.tpm, PERIOD_MS),
    );
    const [allowed, reason, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs] = reply.map(Number) as [number, number, number, number, number, number];
    return { allowed: allowed === 1, reason: REASONS[reason] ?? 'requests', limits, requestsRemaining, requestsResetMs, tokensRemaining, retryAfterMs };
  }

  /** Records one request's usage and debits its tokens (record-usage.lua), atomically. */
  async recordUsage(usage: UsageRecord, defaultTpm: number): Promise<void> {
    const k = this.keys;
    await this.guard(() =>
      this.redis.recordUsage(
        k.usageStream, k.usageDaily(usage.org, utcDay(usage.time)), k.tokenBucket(usage.org, usage.model), k.org(usage.org),
        usage.org, usage.keyId, usage.model, usage.requestId, usage.tokens, usage.time, defaultTpm, PERIOD_MS,
      ),
    );
  }

  /** Stores a new organization; false when one with that id exists. */
  async createOrg(org: OrgRecord): Promise<boolean> {
    const created = await this.guard(() => this.redis.hsetnx(this.keys.org(org.id), 'id', org.id));
    if (created === 0) return false;
    await this.saveOrg(org);
    return true;
  }

  /** Writes an organization record (whole). */
  async saveOrg(org: OrgRecord): Promise<void> {
    await this.guard(() => this.redis.multi().hset(this.keys.org(org.id), encodeOrg(org)).sadd(this.keys.orgs, org.id).exec());
  }

  /** The organization `id`, or null. */
  async getOrg(id: string): Promise<OrgRecord | null> {
    return decodeOrg(await this.guard(() => this.redis.hgetall(this.keys.org(id))));
  }

  /** Every organization, sorted by id. */
  async listOrgs(): Promise<OrgRecord[]> {
    const ids = (await this.guard(() => this.redis.smembers(this.keys.orgs))).sort();
    const orgs = await Promise.all(ids.map((id) => this.getOrg(id)));
    return orgs.filter((org): org is OrgRecord => org !== null);
  }

  /** Stores a new key record; false when the id is taken. */
  async createKey(key: KeyRecord): Promise<boolean> {
    const created = await this.guard(() => this.redis.hsetnx(this.keys.key(key.id), 'id', key.id));
    if (created === 0) return false;
    await this.saveKey(key);
    return true;
  }

  /** Writes a key record (whole). */
  async saveKey(key: KeyRecord): Promise<void> {
    await this.guard(() => this.redis.multi().hset(this.keys.key(key.id), encodeKey(key)).sadd(this.keys.orgKeys(key.org), key.id).exec());
  }

  /** The key record `id`, or null. */
  async getKey(id: string): Promise<KeyRecord | null> {
    return decodeKey(await this.guard(() => this.redis.hgetall(this.keys.key(id))));
  }

  /** Every key of an organization, oldest first. */
  async listKeys(org: string): Promise<KeyRecord[]> {
    const ids = await this.guard(() => this.redis.smembers(this.keys.orgKeys(org)));
    const keys = await Promise.all(ids.map((id) => this.getKey(id)));
    return keys.filter((key): key is KeyRecord => key !== null).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /**
   * Usage entries in stream order, filtered by organization and time (ms, inclusive). Stream
   * ids carry Redis's clock but records carry Envoy's request start time, so the whole stream
   * is paged through and filtered on the record's own time; fine for an operator's query.
   */
  async *readUsage(query: UsageQuery): AsyncGenerator<UsageEntry> {
    let start = '-';
    const end = '+';
    for (;;) {
      const page = await this.guard(() => this.redis.xrange(this.keys.usageStream, start, end, 'COUNT', 1000));
      for (const [id, fields] of page) {
        const entry = decodeUsage(id, fromPairs(fields));
        if (query.org !== undefined && entry.org !== query.org) continue;
        if (query.since !== undefined && entry.time < query.since) continue;
        if (query.until !== undefined && entry.time > query.until) continue;
        yield entry;
      }
      if (page.length < 1000) return;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  /** The organization's daily counters for each day given (empty days are omitted). */
  async readDaily(org: string, days: readonly string[]): Promise<Array<{ day: string; counters: Record<string, number> }>> {
    const hashes = await Promise.all(days.map((day) => this.guard(() => this.redis.hgetall(this.keys.usageDaily(org, day)))));
    return days
      .map((day, i) => ({ day, counters: Object.fromEntries(Object.entries(hashes[i]!).map(([f, v]) => [f, Number(v)])) }))
      .filter((row) => Object.keys(row.counters).length > 0);
  }

  /** Deletes every key under this store's prefix (tests use their own prefix). */
  async purge(): Promise<number> {
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, found] = await this.guard(() => this.redis.scan(cursor, 'MATCH', `${this.keys.prefix}*`, 'COUNT', 500));
      if (found.length > 0) deleted += await this.guard(() => this.redis.unlink(...found));
      cursor = next;
    } while (cursor !== '0');
    return deleted;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private async guard<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }
}
