/**
 * A bounded, short-lived in-process cache of key lookups (the key record with its
 * organization's record, or "not found"), so a steady-state Check makes one Redis round trip,
 * the rate-limit script, instead of two. Rate limits are never cached.
 *
 * Why a stale entry is acceptable: revocation, deletion and organization changes take effect
 * within the TTL (KEY_CACHE_TTL_MS). Expiry needs no TTL: the cached key record carries
 * `expiresAt`, which is checked against `now` on every Check, so an expired key is refused at
 * once even when cached. "Not found" is cached too, so a flood of unknown ids does not reach
 * Redis on every Check. Store faults throw past the cache and are never stored, so an outage
 * still answers UNAVAILABLE for every key not cached.
 *
 * A cached entry serves while Redis is down: the Checks it would allow still need the
 * rate-limit script, which fails, so they are UNAVAILABLE (fail closed); only refusals (401,
 * 403) can be answered from the cache alone, and they are the answers Redis gave within the TTL.
 */
import type { KeyRecord, OrgRecord } from './policy/access.js';

/** One key lookup's result, as the store returns it (nulls: not found). */
export interface KeyLookup {
  readonly key: KeyRecord | null;
  readonly org: OrgRecord | null;
}

/** The default bound on cached key ids. */
export const KEY_CACHE_MAX_ENTRIES = 10_000;

interface Entry {
  readonly lookup: KeyLookup;
  readonly expiresAt: number;
}

/** Key lookups by key id for `ttlMs` (0 disables), at most `maxEntries`, oldest evicted first. */
export class KeyCache {
  // A Map iterates in insertion order, and `set` re-inserts, so the first entry is the oldest.
  private readonly entries = new Map<string, Entry>();

  constructor(
    readonly ttlMs: number,
    readonly maxEntries = KEY_CACHE_MAX_ENTRIES,
  ) {}

  /** The lookup cached for `id` if it is younger than the TTL at `now`. */
  get(id: string, now: number): KeyLookup | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (now < entry.expiresAt) return entry.lookup;
    this.entries.delete(id);
    return undefined;
  }

  /** Caches `lookup` for `id`, read at `now`; evicts the oldest entries past the bound. */
  set(id: string, lookup: KeyLookup, now: number): void {
    if (this.ttlMs <= 0 || this.maxEntries <= 0) return;
    this.entries.delete(id);
    this.entries.set(id, { lookup, expiresAt: now + this.ttlMs });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
  }

  /** How many entries are held (expired ones included until read or evicted). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The cached lookup for `id`, or `load(id)` cached at `now`. A rejected load is not cached:
   * its error (StoreUnavailableError) reaches the caller and the next Check asks Redis again.
   */
  async lookup(id: string, now: number, load: (id: string) => Promise<KeyLookup>): Promise<KeyLookup> {
    const cached = this.get(id, now);
    if (cached) return cached;
    const loaded = await load(id);
    this.set(id, loaded, now);
    return loaded;
  }
}
