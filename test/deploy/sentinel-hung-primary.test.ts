/**
 * A Sentinel client leaves a hung primary for the one the sentinels promote. A primary that
 * hangs (SIGSTOP here, a frozen or cut-off node in a cluster) keeps its TCP connections open, so
 * nothing but the sentinels' word moves a client off it; ioredis hears that word as a
 * +switch-master message only on sentinel connections that are up at that moment, and remade a
 * dropped one after a minute. Here the sentinel restarts first (its subscribers' connections
 * drop), then the primary hangs and the replica is promoted: the client must write to the new
 * primary within 10 s of the promotion (contract/redis-target.ts: the detector's connections
 * remade within a second, and the sentinels asked every second). Real redis-server ×2 and
 * redis-sentinel on free ports.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRedis } from '../../contract/redis-target.js';
import { freePort, startProcess, waitFor, type ChildHandle } from '../support/process.js';
import { makeStackDir, removeStackDir, type StackDir } from '../support/stack.js';

let dirs: StackDir;
let primaryPort: number;
let replicaPort: number;
let sentinelPort: number;
let primary: ChildHandle;
let sentinel: ChildHandle;
const processes: ChildHandle[] = [];

const redisConf = (port: number, extra: string[]) =>
  [`port ${port}`, 'bind 127.0.0.1', 'save ""', 'appendonly no', `dir ${dirs.dir}`, ...extra, ''].join('\n');

function startRedis(name: string, port: number, extra: string[] = []): ChildHandle {
  const conf = join(dirs.dir, `${name}.conf`);
  writeFileSync(conf, redisConf(port, extra));
  const child = startProcess({ name, command: 'redis-server', args: [conf], env: {}, logFile: join(dirs.logDir, `${name}.log`) });
  processes.push(child);
  return child;
}

function startSentinel(): ChildHandle {
  const child = startProcess({
    name: 'sentinel',
    command: 'redis-sentinel',
    args: [join(dirs.dir, 'sentinel.conf')],
    env: {},
    logFile: join(dirs.logDir, 'sentinel.log'),
  });
  processes.push(child);
  return child;
}

/** One command to a node, on a connection of its own (null when it does not answer in 1 s). */
async function ask(port: number, ...args: string[]): Promise<unknown> {
  const redis = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    commandTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await redis.call(args[0]!, ...args.slice(1));
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

const primaryNamed = async () => ((await ask(sentinelPort, 'SENTINEL', 'get-master-addr-by-name', 'ctg')) as string[] | null)?.[1];

beforeAll(async () => {
  dirs = makeStackDir();
  [primaryPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
  primary = startRedis('primary', primaryPort);
  startRedis('replica', replicaPort, [`replicaof 127.0.0.1 ${primaryPort}`]);
  writeFileSync(
    join(dirs.dir, 'sentinel.conf'),
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dirs.dir}`,
      `sentinel monitor ctg 127.0.0.1 ${primaryPort} 1`,
      'sentinel down-after-milliseconds ctg 1000',
      'sentinel failover-timeout ctg 5000',
      '',
    ].join('\n'),
  );
  sentinel = startSentinel();
  await waitFor(
    'the replica in sync and known to the sentinel',
    async () =>
      String(await ask(replicaPort, 'INFO', 'replication')).includes('master_link_status:up') &&
      JSON.stringify(await ask(sentinelPort, 'SENTINEL', 'replicas', 'ctg')).includes(String(replicaPort)),
    30_000,
    processes,
  );
});

afterAll(async () => {
  primary?.child.kill('SIGCONT');
  await Promise.all(processes.map((p) => p.stop()));
  if (dirs) removeStackDir(dirs);
});

it('a client on a primary that hangs writes through the promoted replica within 10 s, though its sentinel restarted before', async () => {
  const client = openRedis(
    { url: 'redis://ignored.invalid:1', sentinels: [{ host: '127.0.0.1', port: sentinelPort }], sentinelName: 'ctg' },
    { commandTimeout: 500, connectTimeout: 1000, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 100 },
  );
  client.on('error', () => undefined);
  try {
    await waitFor('the client on the primary', async () => client.status === 'ready' && (await client.set('k', 'before')) === 'OK', 10_000);
    expect(client.stream.remotePort).toBe(primaryPort);
    // While the sentinels name the primary it is on, the watch never moves it (3 questions).
    let closes = 0;
    client.on('close', () => (closes += 1));
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(closes).toBe(0);
    // The sentinel restarts: every connection to it drops, the failover detector's too.
    await sentinel.stop();
    sentinel = startSentinel();
    await waitFor('the restarted sentinel to name the primary', async () => (await primaryNamed()) === String(primaryPort), 10_000, [
      sentinel,
    ]);
    // Its subscribers reconnect within a second now (ioredis's default was a minute).
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    primary.child.kill('SIGSTOP');
    await waitFor('the sentinel to promote the replica', async () => (await primaryNamed()) === String(replicaPort), 30_000, [sentinel]);
    const promoted = Date.now();
    await waitFor(
      'the client to write through the promoted replica',
      async () => (await client.set('k', 'after').catch(() => null)) === 'OK',
      10_000,
    );
    expect(client.stream.remotePort).toBe(replicaPort);
    expect(await ask(replicaPort, 'GET', 'k')).toBe('after');
    expect(Date.now() - promoted).toBeLessThan(10_000);
  } finally {
    client.disconnect();
  }
}, 90_000);

it("the sentinel's log shows the promotion this test depends on", () => {
  expect(readFileSync(join(dirs.logDir, 'sentinel.log'), 'utf8')).toContain('+switch-master ctg');
});
