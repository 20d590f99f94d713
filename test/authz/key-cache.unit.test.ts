import { describe, expect, it, vi } from 'vitest';
import { KEY_CACHE_DEFAULTS } from '../../authz/src/config.js';
import {
  KEY_CACHE_MAX_ENTRIES,
  KeyCache,
  KeyLookupShedError,
  type KeyLookup,
  type KeyLookupResult,
} from '../../authz/src/store/key-cache.js';
import type { KeyRecord, OrgRecord } from '../../contract/access-records.js';
import { StoreUnavailableError } from '../../authz/src/store/redis.js';

// The cache takes `now` from its caller (check.ts reads the injected clock), so time here is a number.
const NOW = Date.parse('2030-01-01T00:00:00Z');
const org: OrgRecord = { id: 'acme', endpoints: ['embeddings'], models: ['m'], rpm: null, tpm: null, createdAt: 0 };
const key = (id: string): KeyRecord => ({ id, org: 'acme', name: 'n', hash: 'h', createdAt: 0, expiresAt: null, revoked: false });
const found = (id: string): KeyLookup => ({ key: key(id), org });
const NOT_FOUND: KeyLookup = { key: null, org: null };

/** A loader that answers `found(id)` and counts its calls. */
function loader(answer: (id: string) => KeyLookup = found) {
  return vi.fn(async (id: string) => answer(id));
}

/** A loader whose answers wait until released, so lookups can be caught in flight. */
function heldLoader(answer: (id: string) => KeyLookup = found) {
  const waiting: Array<() => void> = [];
  const load = vi.fn((id: string) => new Promise<KeyLookup>((resolve) => waiting.push(() => resolve(answer(id)))));
  return {
    load,
    release: () => {
      for (const go of waiting.splice(0)) go();
    },
    get held() {
      return waiting.length;
    },
  };
}

describe('KeyCache', () => {
  it('serves a lookup until the TTL has passed, then loads again', async () => {
    const cache = new KeyCache(1000);
    const load = loader();
    const first = await cache.lookup('A', NOW, load);
    expect(await cache.lookup('A', NOW + 799, load)).toBe(first);
    expect(load).toHaveBeenCalledTimes(1);
    await cache.lookup('A', NOW + 1000, load);
    expect(load).toHaveBeenCalledTimes(2);
    // The reload is cached from the time it was read.
    await cache.lookup('A', NOW + 1799, load);
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('refreshes a key in use in the last fifth of its TTL in the background, so no Check waits for a lookup', async () => {
    const results: KeyLookupResult[] = [];
    const cache = new KeyCache(1000, {}, (result) => results.push(result));
    let revoked = false;
    const held = heldLoader((id) => ({ key: { ...key(id), revoked }, org }));
    const first = cache.lookup('A', NOW, held.load);
    held.release();
    expect((await first).key?.revoked).toBe(false);
    revoked = true;
    // At 800 ms the entry still answers at once, and one reload starts.
    expect((await cache.lookup('A', NOW + 800, held.load)).key?.revoked).toBe(false);
    expect(await cache.lookup('A', NOW + 900, held.load)).toMatchObject({ key: { revoked: false } });
    expect(held.load).toHaveBeenCalledTimes(2);
    expect(results).toEqual(['miss', 'refresh', 'hit', 'hit']);
    held.release();
    await vi.waitFor(() => expect(cache.get('A', NOW + 1500)?.key?.revoked).toBe(true));
    // The refreshed entry counts from when its reload began (800), never past its own TTL.
    expect(cache.get('A', NOW + 1799)?.key?.revoked).toBe(true);
    expect(cache.get('A', NOW + 1800)).toBeUndefined();
  });

  it('never serves an entry past its TTL while a refresh is slow: the Check waits for the refresh instead', async () => {
    const cache = new KeyCache(1000);
    await cache.lookup('A', NOW, loader());
    const held = heldLoader();
    await cache.lookup('A', NOW + 900, held.load); // starts the refresh, answered from the entry
    let answered = false;
    const late = cache.lookup('A', NOW + 1000, held.load).then((lookup) => {
      answered = true;
      return lookup;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(answered).toBe(false);
    held.release();
    expect((await late).key?.id).toBe('A');
    expect(held.load).toHaveBeenCalledTimes(1);
  });

  it('a failed background refresh changes nothing: the entry expires as it would have', async () => {
    const cache = new KeyCache(1000);
    await cache.lookup('A', NOW, loader());
    const failing = vi.fn(async () => {
      throw new StoreUnavailableError('down');
    });
    expect((await cache.lookup('A', NOW + 900, failing)).key?.id).toBe('A');
    await vi.waitFor(() => expect(failing).toHaveBeenCalledTimes(1));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(cache.get('A', NOW + 999)?.key?.id).toBe('A');
    await expect(cache.lookup('A', NOW + 1000, failing)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('caches "not found" for the TTL, so a repeated unknown id does not reach the store on every Check', async () => {
    const cache = new KeyCache(1000);
    const load = loader(() => NOT_FOUND);
    expect(await cache.lookup('UNKNOWN', NOW, load)).toEqual(NOT_FOUND);
    expect(await cache.lookup('UNKNOWN', NOW + 999, load)).toEqual(NOT_FOUND);
    expect(load).toHaveBeenCalledTimes(1);
    await cache.lookup('UNKNOWN', NOW + 1000, load);
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('never caches a store fault: the error reaches the caller and the next lookup asks again', async () => {
    const cache = new KeyCache(1000);
    const load = vi
      .fn<(id: string) => Promise<KeyLookup>>()
      .mockRejectedValueOnce(new StoreUnavailableError('down'))
      .mockResolvedValue(found('A'));
    await expect(cache.lookup('A', NOW, load)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(cache.size).toEqual({ known: 0, unknown: 0 });
    expect(cache.unknownInFlight).toBe(0);
    expect((await cache.lookup('A', NOW, load)).key?.id).toBe('A');
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('merges concurrent lookups of one id into one load, and every caller gets its answer', async () => {
    const results: KeyLookupResult[] = [];
    const cache = new KeyCache(1000, {}, (result) => results.push(result));
    const held = heldLoader();
    const lookups = Array.from({ length: 100 }, () => cache.lookup('A', NOW, held.load));
    expect(held.load).toHaveBeenCalledTimes(1);
    held.release();
    const answers = await Promise.all(lookups);
    expect(answers.every((a) => a.key?.id === 'A')).toBe(true);
    expect(results.filter((r) => r === 'miss')).toHaveLength(1);
    expect(results.filter((r) => r === 'merged')).toHaveLength(99);
    // Answered from the cache from now on.
    await cache.lookup('A', NOW + 1, held.load);
    expect(held.load).toHaveBeenCalledTimes(1);
    expect(results.at(-1)).toBe('hit');
  });

  it('a failed merged load fails every caller that shared it, and the next lookup loads again', async () => {
    const cache = new KeyCache(1000);
    const load = vi
      .fn<(id: string) => Promise<KeyLookup>>()
      .mockRejectedValueOnce(new StoreUnavailableError('down'))
      .mockResolvedValue(found('A'));
    const shared = [cache.lookup('A', NOW, load), cache.lookup('A', NOW, load)];
    for (const lookup of shared) await expect(lookup).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await cache.lookup('A', NOW, load)).key?.id).toBe('A');
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('sheds lookups of unknown ids past the in-flight bound at once, without loading them', async () => {
    const results: KeyLookupResult[] = [];
    const cache = new KeyCache(1000, { maxUnknownInFlight: 3 }, (result) => results.push(result));
    const held = heldLoader(() => NOT_FOUND);
    const inFlight = ['J1', 'J2', 'J3'].map((id) => cache.lookup(id, NOW, held.load));
    expect(cache.unknownInFlight).toBe(3);
    await expect(cache.lookup('J4', NOW, held.load)).rejects.toBeInstanceOf(KeyLookupShedError);
    expect(held.load).toHaveBeenCalledTimes(3);
    expect(results.at(-1)).toBe('shed');
    // A lookup of an id already in flight joins it instead of being shed.
    const joined = cache.lookup('J1', NOW, held.load);
    held.release();
    await Promise.all([...inFlight, joined]);
    expect(cache.unknownInFlight).toBe(0);
    // Room again once they are answered.
    await expect(
      cache.lookup(
        'J4',
        NOW,
        loader(() => NOT_FOUND),
      ),
    ).resolves.toEqual(NOT_FOUND);
  });

  it('never sheds a known key, even when its entry is stale and unknown ids fill the bound', async () => {
    const cache = new KeyCache(1000, { maxUnknownInFlight: 2 });
    await cache.lookup('REAL', NOW, loader());
    const junk = heldLoader(() => NOT_FOUND);
    const flood = ['J1', 'J2'].map((id) => cache.lookup(id, NOW + 2000, junk.load));
    await expect(cache.lookup('J3', NOW + 2000, junk.load)).rejects.toBeInstanceOf(KeyLookupShedError);
    // REAL's entry is stale at NOW + 2000 (TTL 1000): it refreshes from the store, outside the bound.
    const refresh = loader();
    await expect(cache.lookup('REAL', NOW + 2000, refresh)).resolves.toMatchObject({ key: { id: 'REAL' } });
    expect(refresh).toHaveBeenCalledTimes(1);
    junk.release();
    await Promise.all(flood);
  });

  it('random unknown ids never evict a known key: the two maps have their own bounds', async () => {
    const cache = new KeyCache(60_000, { maxKnown: 2, maxUnknown: 5, maxUnknownInFlight: 1_000 });
    await cache.lookup('REAL1', NOW, loader());
    await cache.lookup('REAL2', NOW, loader());
    const junk = loader(() => NOT_FOUND);
    for (let i = 0; i < 1_000; i += 1) await cache.lookup(`JUNK${i}`, NOW, junk);
    expect(cache.size).toEqual({ known: 2, unknown: 5 });
    const none = loader();
    expect((await cache.lookup('REAL1', NOW + 1, none)).key?.id).toBe('REAL1');
    expect((await cache.lookup('REAL2', NOW + 1, none)).key?.id).toBe('REAL2');
    expect(none).not.toHaveBeenCalled();
    // The newest unknown ids are kept, the oldest went first.
    expect(cache.get('JUNK999', NOW)).toEqual(NOT_FOUND);
    expect(cache.get('JUNK0', NOW)).toBeUndefined();
  });

  it('holds at most maxKnown keys, evicting the one refreshed longest ago first', async () => {
    const cache = new KeyCache(1000, { maxKnown: 3 });
    const load = loader();
    for (const id of ['A', 'B', 'C', 'D']) await cache.lookup(id, NOW, load);
    expect(cache.size.known).toBe(3);
    expect(cache.get('A', NOW)).toBeUndefined();
    expect(cache.get('D', NOW)?.key?.id).toBe('D');
    // A re-stored entry becomes the newest, so B is now the oldest.
    cache.set('B', found('B'), NOW);
    cache.set('E', found('E'), NOW);
    expect(cache.get('C', NOW)).toBeUndefined();
    expect(cache.get('B', NOW)?.key?.id).toBe('B');
  });

  it('defaults: 10,000 known keys, 50,000 unknown ids, 32 unknown lookups in flight', () => {
    expect(KEY_CACHE_MAX_ENTRIES).toBe(10_000);
    expect(KEY_CACHE_DEFAULTS).toEqual({ maxKnown: 10_000, maxUnknown: 50_000, maxUnknownInFlight: 32 });
    const cache = new KeyCache(1000);
    for (let i = 0; i < 10_050; i += 1) cache.set(`K${i}`, found(`K${i}`), NOW);
    expect(cache.size.known).toBe(10_000);
    expect(cache.get('K49', NOW)).toBeUndefined();
    expect(cache.get('K50', NOW)?.key?.id).toBe('K50');
  });

  it('a key deleted from the store moves from the known map to the unknown one', async () => {
    const cache = new KeyCache(1000);
    await cache.lookup('A', NOW, loader());
    await cache.lookup(
      'A',
      NOW + 1000,
      loader(() => NOT_FOUND),
    );
    expect(cache.size).toEqual({ known: 0, unknown: 1 });
    expect(cache.get('A', NOW + 1500)).toEqual(NOT_FOUND);
  });

  it('is disabled at a TTL of 0: every lookup reaches the store, yet a known key is still never shed', async () => {
    const cache = new KeyCache(0, { maxUnknownInFlight: 1 });
    const load = loader();
    await cache.lookup('A', NOW, load);
    await cache.lookup('A', NOW, load);
    expect(load).toHaveBeenCalledTimes(2);
    expect(cache.get('A', NOW)).toBeUndefined();
    // Unknown ids are not remembered at all.
    await cache.lookup(
      'U',
      NOW,
      loader(() => NOT_FOUND),
    );
    expect(cache.size).toEqual({ known: 1, unknown: 0 });
    const junk = heldLoader(() => NOT_FOUND);
    const flood = cache.lookup('J1', NOW, junk.load);
    await expect(cache.lookup('J2', NOW, junk.load)).rejects.toBeInstanceOf(KeyLookupShedError);
    await expect(cache.lookup('A', NOW, load)).resolves.toMatchObject({ key: { id: 'A' } });
    junk.release();
    await flood;
  });
});
