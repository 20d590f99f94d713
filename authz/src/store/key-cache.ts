/**
 * A bounded, short-lived in-process cache of key lookups (the key record with its
 * organization's record, or "not found"), so a steady-state Check makes one Redis round trip,
 * the rate-limit script, instead of two. Rate limits are never cached.
 *
 * Why a stale entry is acceptable: revocation, deletion and organization changes take effect
 * within the TTL (KEY_CACHE_TTL_MS). Expiry needs no TTL: the cached key record carries
 * `expiresAt`, which is checked against `now` on every Check, so an expired key is refused at
 * once even when cached. Store faults throw past the cache and are never stored, so an outage
 * still answers UNAVAILABLE for every key not cached.
 *
 * Legitimate traffic first, during a flood of well-formed unknown key ids:
 * - Keys that exist ("known") and ids that do not ("unknown") live in two maps with their own
 *   bounds. Only a lookup that found a key record enters the known map, so random ids can
 *   never evict a real key: they only push out each other.
 * - Concurrent lookups of one id share one Redis round trip (single flight).
 * - Lookups of ids not known to exist are bounded in flight (`maxUnknownInFlight`); past the
 *   bound a lookup is shed at once (KeyLookupShedError, a fast 503 with retry-after) instead
 *   of queueing, so Redis's queue and authz's memory stay short. A known key whose entry went
 *   stale refreshes outside that bound: it is never shed and never waits behind unknown ids.
 *   Its stale entry is kept (never served) as the mark that the id is known.
 * - A key in use never waits for a lookup at all: in the last fifth of its entry's TTL a Check
 *   is answered from the entry while one lookup refreshes it in the background, so the fresh
 *   entry is there before the old one expires. No entry is ever served past its own TTL, so the
 *   revocation bound is unchanged.
 *
 * A cached entry serves while Redis is down: the Checks it would allow still need the
 * rate-limit script, which fails, so they are UNAVAILABLE (fail closed); only refusals (401,
 * 403) can be answered from the cache alone, and they are the answers Redis gave within the TTL.
 */
import type { KeyRecord, OrgRecord } from '../../../contract/access-records.js';
import { KEY_CACHE_DEFAULTS } from '../config.js';

/** One key lookup's result, as the store returns it (nulls: not found). */
export interface KeyLookup {
  readonly key: KeyRecord | null;
  readonly org: OrgRecord | null;
}

/**
 * How one lookup was answered: from the cache, by a new load, by joining one in flight, or
 * shed; `refresh` counts a background reload started by a hit near the end of its TTL.
 */
export type KeyLookupResult = 'hit' | 'miss' | 'merged' | 'shed' | 'refresh';

/** The part of the TTL, at its end, in which a hit also refreshes its entry. */
const REFRESH_AHEAD_FRACTION = 0.2;

/** The cache's bounds. */
export interface KeyCacheLimits {
  /** Keys that exist, held at most; the oldest refreshed goes first. */
  readonly maxKnown: number;
  /** "Not found" answers held at most; never displaces a known key. */
  readonly maxUnknown: number;
  /** Loads of ids not known to exist, in flight at once; past it lookups are shed. */
  readonly maxUnknownInFlight: number;
}

/** The default bound on cached keys that exist (config.ts owns the defaults of every bound). */
export const KEY_CACHE_MAX_ENTRIES = KEY_CACHE_DEFAULTS.maxKnown;

/** A lookup refused because too many lookups of unknown ids are in flight; never cached. */
export class KeyLookupShedError extends Error {
  constructor() {
    super('too many lookups of unknown keys in flight');
    this.name = 'KeyLookupShedError';
  }
}

const NOT_FOUND: KeyLookup = Object.freeze({ key: null, org: null });

interface Entry {
  readonly lookup: KeyLookup;
  readonly expiresAt: number;
}

/** Key lookups by key id for `ttlMs` (0: never reused), within `limits`. */
export class KeyCache {
  // Maps iterate in insertion order and every store re-inserts, so the first entry is the oldest.
  private readonly known = new Map<string, Entry>();
  /** Unknown id → when its "not found" stops being served. */
  private readonly unknown = new Map<string, number>();
  private readonly loading = new Map<string, Promise<KeyLookup>>();
  private unknownLoads = 0;
  readonly limits: KeyCacheLimits;

  constructor(
    readonly ttlMs: number,
    limits: Partial<KeyCacheLimits> = {},
    private readonly observe: (result: KeyLookupResult) => void = () => undefined,
  ) {
    this.limits = Object.freeze({ ...KEY_CACHE_DEFAULTS, ...limits });
  }

  /** The lookup cached for `id` if it is younger than the TTL at `now`. */
  get(id: string, now: number): KeyLookup | undefined {
    const known = this.known.get(id);
    if (known) return now < known.expiresAt ? known.lookup : undefined;
    const until = this.unknown.get(id);
    if (until === undefined) return undefined;
    if (now < until) return NOT_FOUND;
    this.unknown.delete(id);
    return undefined;
  }

  /** Caches `lookup` for `id`, read at `now`, in the map its answer belongs to. */
  set(id: string, lookup: KeyLookup, now: number): void {
    const expiresAt = now + Math.max(0, this.ttlMs);
    this.known.delete(id);
    this.unknown.delete(id);
    if (lookup.key !== null) {
      // Kept even at a TTL of 0: never served then, but it marks the id as a key that exists.
      this.known.set(id, { lookup, expiresAt });
      evictOldest(this.known, this.limits.maxKnown);
    } else if (this.ttlMs > 0) {
      this.unknown.set(id, expiresAt);
      evictOldest(this.unknown, this.limits.maxUnknown);
    }
  }

  /** Entries held: known keys (stale ones included) and unknown ids (until read or evicted). */
  get size(): { readonly known: number; readonly unknown: number } {
    return { known: this.known.size, unknown: this.unknown.size };
  }

  /** Loads of unknown ids in flight now. */
  get unknownInFlight(): number {
    return this.unknownLoads;
  }

  /**
   * The cached lookup for `id`, or `load(id)` cached at `now`, shared by every concurrent lookup
   * of `id`. Rejects with KeyLookupShedError when `id` is not known to exist and the bound on
   * such loads is reached. A rejected load is not cached: its error (StoreUnavailableError)
   * reaches every caller that shared it, and the next Check asks Redis again.
   */
  lookup(id: string, now: number, load: (id: string) => Promise<KeyLookup>): Promise<KeyLookup> {
    const cached = this.get(id, now);
    if (cached) {
      if (cached.key !== null) this.refreshAhead(id, now, load);
      return this.answer('hit', Promise.resolve(cached));
    }
    const pending = this.loading.get(id);
    if (pending) return this.answer('merged', pending);
    const isKnown = this.known.has(id);
    if (!isKnown && this.unknownLoads >= this.limits.maxUnknownInFlight) {
      return this.answer('shed', Promise.reject(new KeyLookupShedError()));
    }
    return this.answer('miss', this.startLoad(id, now, load, isKnown));
  }

  // A known key's entry in the last part of its TTL: reload it once in the background. A failed
  // reload changes nothing (the entry expires as it would have; the next lookup asks again).
  private refreshAhead(id: string, now: number, load: (id: string) => Promise<KeyLookup>): void {
    const entry = this.known.get(id);
    if (!entry || this.loading.has(id) || now < entry.expiresAt - this.ttlMs * REFRESH_AHEAD_FRACTION) return;
    this.observe('refresh');
    this.startLoad(id, now, load, true).catch(() => undefined);
  }

  private startLoad(id: string, now: number, load: (id: string) => Promise<KeyLookup>, isKnown: boolean): Promise<KeyLookup> {
    if (!isKnown) this.unknownLoads += 1;
    const loaded = new Promise<KeyLookup>((resolve) => resolve(load(id))).then(
      (lookup) => {
        this.settle(id, isKnown);
        this.set(id, lookup, now);
        return lookup;
      },
      (error: unknown) => {
        this.settle(id, isKnown);
        throw error;
      },
    );
    this.loading.set(id, loaded);
    return loaded;
  }

  private settle(id: string, wasKnown: boolean): void {
    this.loading.delete(id);
    if (!wasKnown) this.unknownLoads -= 1;
  }

  private answer(result: KeyLookupResult, lookup: Promise<KeyLookup>): Promise<KeyLookup> {
    this.observe(result);
    return lookup;
  }
}

function evictOldest<V>(map: Map<string, V>, max: number): void {
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}
