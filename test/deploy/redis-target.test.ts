/**
 * Redis as production runs it (deploy/redis/): a primary with a password and TLS only, found
 * through a Sentinel that has its own password and TLS. contract/redis-target.ts must log in to
 * both, over TLS verified with the private CA; a wrong sentinel password, or no CA, must fail.
 * Real redis-server and redis-sentinel (Debian's 7.0, built with TLS) on free ports.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRedis, type RedisTarget } from '../../contract/redis-target.js';
import { type ChildHandle, freePort, startProcess, waitFor, type ManagedProcess } from '../support/process.js';
import { makeStackDir, removeStackDir, type StackDir } from '../support/stack.js';

const password = randomBytes(12).toString('hex');
const sentinelPassword = randomBytes(12).toString('hex');
let dirs: StackDir;
let redisPort: number;
let sentinelPort: number;
let ca: string;
let sentinel: ChildHandle;
const processes: ManagedProcess[] = [];

/** TLS on the only port; clients need no certificate of their own (as deploy/redis/ configures it). */
const tlsLines = (d: StackDir) => [
  `tls-cert-file ${d.certFile}`,
  `tls-key-file ${d.keyFile}`,
  `tls-ca-cert-file ${d.caFile}`,
  'tls-auth-clients no',
  'tls-replication yes',
  'port 0',
];

beforeAll(async () => {
  dirs = makeStackDir();
  ca = readFileSync(dirs.caFile, 'utf8');
  redisPort = await freePort();
  sentinelPort = await freePort();
  const redisConf = join(dirs.dir, 'redis.conf');
  writeFileSync(
    redisConf,
    [
      `tls-port ${redisPort}`,
      'bind 127.0.0.1',
      `requirepass ${password}`,
      `masterauth ${password}`,
      'save ""',
      'appendonly no',
      ...tlsLines(dirs),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  processes.push(
    startProcess({ name: 'redis', command: 'redis-server', args: [redisConf], env: {}, logFile: join(dirs.logDir, 'redis.log') }),
  );
  const sentinelConf = join(dirs.dir, 'sentinel.conf');
  writeFileSync(
    sentinelConf,
    [
      `tls-port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dirs.dir}`,
      ...tlsLines(dirs),
      `requirepass ${sentinelPassword}`,
      `sentinel sentinel-pass ${sentinelPassword}`,
      `sentinel monitor ctg 127.0.0.1 ${redisPort} 1`,
      `sentinel auth-pass ctg ${password}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  sentinel = startProcess({
    name: 'sentinel',
    command: 'redis-sentinel',
    args: [sentinelConf],
    env: {},
    logFile: join(dirs.logDir, 'sentinel.log'),
  });
  processes.push(sentinel);
  await waitFor('redis and the sentinel to accept TLS logins', async () => (await roundTrip(target())) === 'ok', 20_000, processes);
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  if (dirs) removeStackDir(dirs);
});

function target(overrides: Partial<RedisTarget> = {}): RedisTarget {
  return {
    url: `rediss://:${password}@ignored.invalid:1`,
    sentinels: [{ host: '127.0.0.1', port: sentinelPort }],
    sentinelName: 'ctg',
    sentinelPassword,
    tlsCa: ca,
    ...overrides,
  };
}

/** SET then GET through a fresh connection within 5 s; the error's message when it fails. */
async function roundTrip(t: RedisTarget): Promise<string> {
  const redis = openRedis(t, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    sentinelRetryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  const attempt = (async () => {
    await redis.connect();
    const key = `ctg-redis-target-test:${randomBytes(4).toString('hex')}`;
    await redis.set(key, 'v', 'EX', 60);
    return (await redis.get(key)) === 'v' ? 'ok' : 'wrong value';
  })();
  // A refused login may leave ioredis retrying quietly: no answer in time is a failure too.
  const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('no connection within 5 s'), 5_000).unref());
  try {
    return await Promise.race([attempt.catch((error: Error) => error.message), timeout]);
  } finally {
    redis.disconnect();
  }
}

describe('the Redis target through Sentinel, with passwords and TLS', () => {
  it('logs in to the sentinel and the primary it names, over TLS verified with the private CA', async () => {
    expect(await roundTrip(target())).toBe('ok');
  });

  it("without the primary's password the primary refuses it (the password travels in the URL)", async () => {
    expect(await roundTrip(target({ url: 'rediss://ignored.invalid:1' }))).not.toBe('ok');
    expect(await roundTrip(target({ url: 'rediss://:wrong@ignored.invalid:1' }))).not.toBe('ok');
  });

  it('a wrong sentinel password, or no private CA, and nothing connects', async () => {
    expect(await roundTrip(target({ sentinelPassword: 'wrong' }))).not.toBe('ok');
    expect(await roundTrip(target({ tlsCa: undefined }))).not.toBe('ok');
  });

  // ioredis 5 ends a Sentinel client for good when its failover detector (+switch-master)
  // disconnects it while it asks the sentinels again (make fleet's Redis scenarios hit it: an
  // embedder's store dead for the rest of the run). Reproduced by doing what the detector does,
  // on the client's connector, at the moment the race needs: the client must come back by itself.
  it('a client its failover detector ends mid-reconnect connects again; one its owner closes stays closed', async () => {
    const redis = openRedis(target(), { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    redis.on('error', () => undefined);
    try {
      await waitFor('the client to be ready', async () => redis.status === 'ready', 10_000);
      const connector = (redis as unknown as { connector: { disconnect(): void } }).connector;
      const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
      redis.once('connecting', () => connector.disconnect());
      (redis as unknown as { stream: { destroy(): void } }).stream.destroy();
      await ended;
      await waitFor('the ended client to be ready again', async () => redis.status === 'ready', 10_000);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
    await waitFor('the closed client to end', async () => redis.status === 'end', 5_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(redis.status).toBe('end');
  });

  // A reconnect is how a Sentinel client finds a promoted primary: its delay is part of the
  // fail-closed window of a failover (make fleet), so it is capped whatever the caller asked.
  it("a Sentinel client reconnects within 250 ms whatever the caller's retry strategy; a plain one keeps it", () => {
    const opts = { lazyConnect: true, retryStrategy: (times: number) => times * 1000 };
    const viaSentinel = openRedis(target(), opts);
    const plain = openRedis({ url: `rediss://:${password}@127.0.0.1:${redisPort}`, tlsCa: ca }, opts);
    expect(viaSentinel.options.retryStrategy?.(1)).toBe(250);
    expect(viaSentinel.options.retryStrategy?.(20)).toBe(250);
    expect(plain.options.retryStrategy?.(20)).toBe(20_000);
    viaSentinel.disconnect();
    plain.disconnect();
  });

  // Every Sentinel client asks a sentinel each second which primary it names. Closing the client
  // while that question is out (a frozen sentinel holds it for 5 s) used to throw from the
  // question's error path, an unhandled rejection that killed the admin CLI's `usage export` in
  // make fleet's Redis scenarios.
  it('a client closed while its question to a frozen sentinel is out closes cleanly', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    const redis = openRedis(target(), { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    redis.on('error', () => undefined);
    try {
      await waitFor('the client to be ready', async () => redis.status === 'ready', 10_000);
      // Past one watch tick, so the watch holds a connection to the sentinel before it freezes.
      await new Promise((r) => setTimeout(r, 1_300));
      sentinel.child.kill('SIGSTOP');
      // Past the next tick: its question is out and will not be answered for 5 s.
      await new Promise((r) => setTimeout(r, 1_300));
      redis.disconnect();
      // The question fails when its 5 s run out (the closed connection does not end it sooner).
      await new Promise((r) => setTimeout(r, 5_500));
    } finally {
      sentinel.child.kill('SIGCONT');
      process.off('unhandledRejection', record);
    }
    expect(unhandled).toEqual([]);
    expect(redis.status).toBe('end');
    expect(await roundTrip(target())).toBe('ok');
  });

  it('a plain URL with TLS and the CA works without Sentinel too', async () => {
    expect(await roundTrip({ url: `rediss://:${password}@127.0.0.1:${redisPort}`, tlsCa: ca })).toBe('ok');
    expect(await roundTrip({ url: `rediss://:${password}@127.0.0.1:${redisPort}` })).not.toBe('ok');
  });
});
