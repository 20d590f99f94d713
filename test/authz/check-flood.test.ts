/**
 * A flood of well-formed unknown keys through the real gRPC server over the real Redis: lookups
 * of one id are merged, unknown ids beyond the in-flight bound are shed at once with
 * UNAVAILABLE (Envoy's fast 503), and known keys — cached or stale — are answered meanwhile.
 * Junk lookups are held at a gate in front of the real store, so "in flight" is exact; the
 * clock is fixed so TTLs are too.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { envoyCheck, startAuthz, testConfig, type RunningAuthz } from '../support/grpc-authz.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const TTL_MS = 1000;
const IN_FLIGHT = 8;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A well-formed key whose id (J + 11 letters from `n`) exists nowhere. */
function junkKey(n: number): string {
  const id = `J${Array.from({ length: 11 }, (_, i) => LETTERS[Math.floor(n / 26 ** i) % 26]).join('')}`;
  return `Bearer CTG_${id}_${'A'.repeat(38)}`;
}

/** The answer as a word: the problem code, "ok", or the gRPC status name of a fault. */
async function outcome(authz: RunningAuthz, authorization: string): Promise<string> {
  try {
    const response = await authz.check(envoyCheck({ authorization }));
    return response.http_response === 'ok_response' ? 'ok' : (JSON.parse(response.denied_response!.body) as { code: string }).code;
  } catch (error) {
    return grpc.status[(error as grpc.ServiceError).code]!;
  }
}

describe('Check during a flood of unknown keys (real gRPC, real Redis)', () => {
  let now = NOW;
  let authz: RunningAuthz;
  let known: string;
  // Junk ids' lookups wait here until a test opens the gate. They are told from the known key by
  // its id, not by their leading J: a minted id starts with J too, now and then.
  let openGate: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  const closeGate = () => {
    gate = new Promise((resolve) => (openGate = resolve));
  };
  let lookupKey: ReturnType<typeof vi.fn>;

  beforeAll(async () => {
    authz = await startAuthz(testConfig(testPrefix(), { keyCacheTtlMs: TTL_MS, keyLookupsMaxInFlight: IN_FLIGHT }), { clock: () => now });
    await addOrg(authz.store, 'acme');
    const minted = await addKey(authz.store, 'acme');
    known = `Bearer ${minted.key}`;
    const real = authz.store.lookupKey.bind(authz.store);
    lookupKey = vi.fn(async (id: string) => {
      if (id !== minted.id) await gate;
      return real(id);
    });
    authz.store.lookupKey = lookupKey as typeof authz.store.lookupKey;
  });

  afterAll(async () => {
    openGate();
    await authz.store.purge();
    await authz.stop();
  });

  it('merges 100 concurrent Checks of one unknown id into one Redis lookup, and all get 401', async () => {
    now = NOW;
    closeGate();
    lookupKey.mockClear();
    const answers = Array.from({ length: 100 }, () => outcome(authz, junkKey(1)));
    await vi.waitFor(() => expect(lookupKey).toHaveBeenCalledTimes(1));
    openGate();
    expect(new Set(await Promise.all(answers))).toEqual(new Set(['invalid_api_key']));
    expect(lookupKey).toHaveBeenCalledTimes(1);
  });

  it('sheds unknown ids past the bound at once, while a cached known key is allowed', async () => {
    now = NOW + 10 * TTL_MS;
    expect(await outcome(authz, known)).toBe('ok'); // cached from here on
    closeGate();
    lookupKey.mockClear();
    const flood = Array.from({ length: 200 }, (_, i) => outcome(authz, junkKey(1000 + i)));
    // Everything beyond the bound is answered while the gate is still shut: nothing waits for Redis.
    const shed = await Promise.race([
      Promise.all(flood.slice(IN_FLIGHT)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('shed Checks waited')), 5_000)),
    ]);
    expect(new Set(shed)).toEqual(new Set(['UNAVAILABLE']));
    expect(lookupKey).toHaveBeenCalledTimes(IN_FLIGHT);
    // The known key, while IN_FLIGHT junk lookups still hold the bound.
    expect(await Promise.all([outcome(authz, known), outcome(authz, known)])).toEqual(['ok', 'ok']);
    openGate();
    expect(new Set(await Promise.all(flood.slice(0, IN_FLIGHT)))).toEqual(new Set(['invalid_api_key']));
  });

  it('refreshes a known key whose entry went stale outside the bound, while the flood holds it', async () => {
    now = NOW + 20 * TTL_MS; // every entry is stale now
    closeGate();
    lookupKey.mockClear();
    const flood = Array.from({ length: 50 }, (_, i) => outcome(authz, junkKey(5000 + i)));
    await vi.waitFor(() => expect(lookupKey).toHaveBeenCalledTimes(IN_FLIGHT));
    expect(await outcome(authz, known)).toBe('ok');
    expect(lookupKey).toHaveBeenCalledTimes(IN_FLIGHT + 1);
    expect(lookupKey.mock.calls.at(-1)![0]).toBe(known.split('_')[1]);
    openGate();
    const answers = await Promise.all(flood);
    expect(answers.filter((a) => a === 'invalid_api_key')).toHaveLength(IN_FLIGHT);
    expect(answers.filter((a) => a === 'UNAVAILABLE')).toHaveLength(50 - IN_FLIGHT);
  });

  it('a repeated junk id is answered from the negative cache: 401 with no Redis lookup', async () => {
    now = NOW + 30 * TTL_MS;
    lookupKey.mockClear();
    expect(await outcome(authz, junkKey(9000))).toBe('invalid_api_key');
    expect(await outcome(authz, junkKey(9000))).toBe('invalid_api_key');
    expect(lookupKey).toHaveBeenCalledTimes(1);
  });
});
