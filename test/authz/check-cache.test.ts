/**
 * The key cache through the real gRPC server over the real Redis: a cached Check makes exactly
 * one Redis round trip (the settlement library's check), changes show within KEY_CACHE_TTL_MS, expiry is
 * immediate, and an outage still fails closed. Redis round trips are counted twice: by spying
 * on the store, and by MONITOR on a separate connection (filtered by this test's prefix).
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { envoyCheck, startAuthz, testConfig, TEST_MODEL, type RunningAuthz } from '../support/grpc-authz.js';
import { startRedisProxy } from '../support/redis-proxy.js';
import { connectedStore, TEST_REDIS_URL, testPrefix } from '../support/redis-store.js';
import { OrgStore } from '../../admin/src/store/organizations.js';
import { settlementFunctionNames } from '../../contract/redis/settlement-keys.js';
import { addKey, addOrg } from './fixtures.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const TTL_MS = 1000;
const UNKNOWN = `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`;

/** One MONITOR line's arguments (`"set" "k" "v"`, C escapes) and source (`127.0.0.1:5000`, or `lua`). */
function monitorLine(line: string): { args: string[]; source: string } {
  const source = /^\+[\d.]+ \[\d+ ([^\]]+)\]/.exec(line)?.[1] ?? '';
  const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map(([, quoted]) =>
    quoted!.replace(/\\x([0-9a-f]{2})|\\(.)/g, (_, hex: string | undefined, char: string) =>
      hex ? String.fromCharCode(Number.parseInt(hex, 16)) : char,
    ),
  );
  return { args, source };
}

/**
 * Redis commands sent under `prefix` (or calling its check function) by clients (not by Lua
 * scripts), in execution order. MONITOR is read on a plain socket: ioredis's monitor mode
 * fails ("Command queue state error") when the first monitored command arrives in the same read
 * as MONITOR's +OK, which the shared Redis's traffic from the other lanes made happen in `make test`.
 */
async function startMonitor(prefix: string) {
  const checkFunction = settlementFunctionNames(prefix).check;
  const redis = new Redis(TEST_REDIS_URL);
  const url = new URL(TEST_REDIS_URL);
  const socket = connect(Number(url.port || 6379), url.hostname);
  await once(socket, 'connect');
  let seen: string[][] = [];
  let sentinels = 0;
  let pending = '';
  let monitoring: (() => void) | undefined;
  const auth = url.password ? [url.username || 'default', decodeURIComponent(url.password)] : [];
  // Inline commands, answered in order: AUTH's +OK (if any), then MONITOR's.
  let oks = auth.length ? 2 : 1;
  const started = new Promise<void>((resolve) => (monitoring = resolve));
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\r\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith('-')) throw new Error(`MONITOR refused: ${line}`);
      if (line === '+OK' && --oks === 0) monitoring?.();
      const { args, source } = monitorLine(line);
      if (source !== 'lua' && args.some((arg) => arg.startsWith(prefix) || arg === checkFunction)) seen.push(args);
    }
  });
  if (auth.length) socket.write(`AUTH ${auth.join(' ')}\r\n`);
  socket.write('MONITOR\r\n');
  await started;
  return {
    /** The commands since the last call; a sentinel command marks the end, since MONITOR is asynchronous. */
    async take(): Promise<string[][]> {
      sentinels += 1;
      const sentinel = `${prefix}monitor-sentinel:${sentinels}`;
      await redis.exists(sentinel);
      await vi.waitFor(() => expect(seen.some((args) => args.includes(sentinel))).toBe(true));
      const taken = seen.filter((args) => !args.includes(sentinel));
      seen = [];
      return taken;
    },
    async stop(): Promise<void> {
      socket.destroy();
      redis.disconnect();
    },
  };
}

function problemCode(response: Awaited<ReturnType<RunningAuthz['check']>>): string {
  return response.http_response === 'ok_response' ? 'ok' : (JSON.parse(response.denied_response!.body) as { code: string }).code;
}

describe('Check with the key cache (real gRPC, real Redis)', () => {
  const prefix = testPrefix();
  let now = NOW;
  let authz: RunningAuthz;
  let monitor: Awaited<ReturnType<typeof startMonitor>>;

  beforeAll(async () => {
    authz = await startAuthz(testConfig(prefix, { keyCacheTtlMs: TTL_MS }), { clock: () => now });
    await addOrg(authz.store, 'acme');
    // The layout migration (store/migrate-layout.ts) SCANs under the prefix in the background;
    // on the shared Redis of make test, full of the other lanes' keys, it was still scanning at
    // the first count (CI: 3 commands, not 2).
    await authz.store.settlement.migrated();
    monitor = await startMonitor(prefix);
  });

  afterAll(async () => {
    await monitor.stop();
    await authz.store.purge();
    await authz.stop();
  });

  const check = async (authorization: string) => problemCode(await authz.check(envoyCheck({ authorization })));

  it('makes two round trips for an uncached key, then exactly one (the rate-limit script) while cached', async () => {
    now = NOW;
    const { key } = await addKey(authz.store, 'acme');
    const lookupKey = vi.spyOn(authz.store, 'lookupKey');
    const checkLimits = vi.spyOn(authz.store, 'checkLimits');
    try {
      await monitor.take();
      expect(await check(`Bearer ${key}`)).toBe('ok');
      const uncached = await monitor.take();
      expect(uncached, JSON.stringify(uncached)).toHaveLength(2);
      expect([lookupKey.mock.calls.length, checkLimits.mock.calls.length]).toEqual([1, 1]);

      // Well inside the TTL (in its last fifth a hit also refreshes the entry in the background).
      now = NOW + TTL_MS / 2;
      expect(await check(`Bearer ${key}`)).toBe('ok');
      const commands = await monitor.take();
      expect(commands, JSON.stringify(commands)).toHaveLength(1);
      // The check function (settlement.lua): it names its keys itself, under the secret namespace.
      expect(commands[0]![0]!.toLowerCase()).toBe('fcall');
      expect(commands[0]).toContain(settlementFunctionNames(prefix).check);
      expect(commands[0]).toContain(TEST_MODEL);
      expect([lookupKey.mock.calls.length, checkLimits.mock.calls.length]).toEqual([1, 2]);
    } finally {
      lookupKey.mockRestore();
      checkLimits.mockRestore();
    }
  });

  it('a key in use is refreshed in the background near the end of its TTL: past the TTL it still costs one round trip', async () => {
    now = NOW;
    const { key } = await addKey(authz.store, 'acme');
    expect(await check(`Bearer ${key}`)).toBe('ok');
    now = NOW + TTL_MS * 0.9;
    await monitor.take();
    expect(await check(`Bearer ${key}`)).toBe('ok');
    // The rate-limit script and the background key lookup, which the answer did not wait for.
    const seen: string[][] = [];
    await vi.waitFor(async () => {
      seen.push(...(await monitor.take()));
      expect(seen).toHaveLength(2);
    });
    now = NOW + TTL_MS * 1.5;
    await monitor.take();
    expect(await check(`Bearer ${key}`)).toBe('ok');
    expect(await monitor.take()).toHaveLength(1);
  });

  it('answers a revoked key from the cache within the TTL, and 401 revoked_api_key once it has passed', async () => {
    now = NOW;
    const { id, key } = await addKey(authz.store, 'acme');
    expect(await check(`Bearer ${key}`)).toBe('ok');
    // As `npm run admin -- key revoke` does.
    const admin = new OrgStore(authz.store.connection);
    await admin.saveKey({ ...(await admin.getKey(id))!, revoked: true });
    now = NOW + TTL_MS - 1;
    expect(await check(`Bearer ${key}`)).toBe('ok');
    now = NOW + TTL_MS;
    expect(await check(`Bearer ${key}`)).toBe('revoked_api_key');
  });

  it('refuses an expired key at once, even when its record is cached', async () => {
    now = NOW;
    const { key } = await addKey(authz.store, 'acme', { expiresAt: NOW + 500 });
    expect(await check(`Bearer ${key}`)).toBe('ok');
    now = NOW + 500;
    await monitor.take();
    expect(await check(`Bearer ${key}`)).toBe('expired_api_key');
    expect(await monitor.take()).toEqual([]);
  });

  it('caches an unknown key id: the second Check reaches no Redis at all', async () => {
    now = NOW;
    expect(await check(UNKNOWN)).toBe('invalid_api_key');
    await monitor.take();
    expect(await check(UNKNOWN)).toBe('invalid_api_key');
    expect(await monitor.take()).toEqual([]);
  });
});

describe('Check with the key cache while Redis is unavailable', () => {
  it('stays fail closed: cached and uncached keys are UNAVAILABLE; a cached refusal is still a refusal', async () => {
    const prefix = testPrefix();
    const proxy = await startRedisProxy();
    const authz = await startAuthz(testConfig(prefix, { redisUrl: proxy.url, redisTimeoutMs: 1000, keyCacheTtlMs: TTL_MS }), {
      clock: () => NOW,
    });
    const status = (authorization: string) =>
      authz.check(envoyCheck({ authorization })).then(problemCode, (error: grpc.ServiceError) => error.code);
    try {
      await addOrg(authz.store, 'acme');
      const cached = await addKey(authz.store, 'acme');
      const uncached = await addKey(authz.store, 'acme');
      expect(await status(`Bearer ${cached.key}`)).toBe('ok');
      expect(await status(UNKNOWN)).toBe('invalid_api_key');
      proxy.stall();
      const lookupKey = vi.spyOn(authz.store, 'lookupKey');
      // The record is cached, but the rate limit needs Redis: nothing is let through unchecked.
      expect(await status(`Bearer ${cached.key}`)).toBe(grpc.status.UNAVAILABLE);
      expect(await status(`Bearer ${uncached.key}`)).toBe(grpc.status.UNAVAILABLE);
      // The fault was not cached: the same key asks Redis again (and is still UNAVAILABLE).
      expect(await status(`Bearer ${uncached.key}`)).toBe(grpc.status.UNAVAILABLE);
      expect(lookupKey).toHaveBeenCalledTimes(2);
      expect(await status(UNKNOWN)).toBe('invalid_api_key');
    } finally {
      await proxy.stop();
      await authz.stop();
      const cleanup = await connectedStore(prefix);
      await cleanup.purge();
      await cleanup.close();
    }
  });
});
