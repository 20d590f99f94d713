import { describe, expect, it, vi } from 'vitest';
import { KEY_CACHE_MAX_ENTRIES, KeyCache, type KeyLookup } from '../../authz/src/key-cache.js';
import type { KeyRecord, OrgRecord } from '../../authz/src/policy/access.js';
import { StoreUnavailableError } from '../../authz/src/store/redis.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const org: OrgRecord = { id: 'acme', endpoints: ['embeddings'], models: ['m'], rpm: null, tpm: null, createdAt: 0 };
const key = (id: string): KeyRecord => ({ id, org: 'acme', name: 'n', hash: 'h', createdAt: 0, expiresAt: null, revoked: false });
const found = (id: string): KeyLookup => ({ key: key(id), org });
const NOT_FOUND: KeyLookup = { key: null, org: null };

/** A loader that answers `found(id)` and counts its calls. */
function loader(answer: (id: string) => KeyLookup = found) {
  return vi.fn(async (id: string) => answer(id));
}

describe('KeyCache', () => {
  it('serves a lookup until the TTL has passed, then loads again', async () => {
    const cache = new KeyCache(1000);
    const load = loader();
    const first = await cache.lookup('A', NOW, load);
    expect(await cache.lookup('A', NOW + 999, load)).toBe(first);
    expect(load).toHaveBeenCalledTimes(1);
    await cache.lookup('A', NOW + 1000, load);
    expect(load).toHaveBeenCalledTimes(2);
    // The reload is cached from the time it was read.
    await cache.lookup('A', NOW + 1999, load);
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('caches "not found", so unknown ids do not reach the store on every Check', async () => {
    const cache = new KeyCache(1000);
    const load = loader(() => NOT_FOUND);
    expect(await cache.lookup('UNKNOWN', NOW, load)).toEqual(NOT_FOUND);
    expect(await cache.lookup('UNKNOWN', NOW + 500, load)).toEqual(NOT_FOUND);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('never caches a store fault: the error reaches the caller and the next lookup asks again', async () => {
    const cache = new KeyCache(1000);
    const load = vi.fn<(id: string) => Promise<KeyLookup>>()
      .mockRejectedValueOnce(new StoreUnavailableError('down'))
      .mockResolvedValue(found('A'));
    await expect(cache.lookup('A', NOW, load)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(cache.size).toBe(0);
    expect((await cache.lookup('A', NOW, load)).key?.id).toBe('A');
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('holds at most maxEntries, evicting the oldest first', async () => {
    const cache = new KeyCache(1000, 3);
    const load = loader();
    for (const id of ['A', 'B', 'C', 'D']) await cache.lookup(id, NOW, load);
    expect(cache.size).toBe(3);
    expect(cache.get('A', NOW)).toBeUndefined();
    expect(cache.get('D', NOW)?.key?.id).toBe('D');
    // A re-stored entry becomes the newest, so B is now the oldest.
    cache.set('B', found('B'), NOW);
    cache.set('E', found('E'), NOW);
    expect(cache.get('C', NOW)).toBeUndefined();
    expect(cache.get('B', NOW)?.key?.id).toBe('B');
  });

  it('is bounded at 10,000 entries by default', () => {
    const cache = new KeyCache(1000);
    for (let i = 0; i < KEY_CACHE_MAX_ENTRIES + 50; i += 1) cache.set(`K${i}`, NOT_FOUND, NOW);
    expect(KEY_CACHE_MAX_ENTRIES).toBe(10_000);
    expect(cache.size).toBe(10_000);
    expect(cache.get('K49', NOW)).toBeUndefined();
    expect(cache.get('K50', NOW)).toEqual(NOT_FOUND);
  });

  it('drops an expired entry when it is read', () => {
    const cache = new KeyCache(1000);
    cache.set('A', found('A'), NOW);
    expect(cache.get('A', NOW + 1000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('is disabled at a TTL of 0: every lookup reaches the store', async () => {
    const cache = new KeyCache(0);
    const load = loader();
    await cache.lookup('A', NOW, load);
    await cache.lookup('A', NOW, load);
    expect(load).toHaveBeenCalledTimes(2);
    expect(cache.size).toBe(0);
  });
});
