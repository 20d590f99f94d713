/**
 * How a service reaches Redis: one URL, or the primary that Redis Sentinel names (ioredis asks
 * the sentinels, and again after a failover). Shared by every service that talks to Redis, and
 * read from the environment the same way by each (readRedisSettings).
 *
 * The URL carries the credentials and the transport in both cases: `redis://[user]:password@…`
 * or `rediss://…` (TLS). With sentinels its host is unused, but its user, password, database
 * and scheme still apply to the primary, and TLS (rediss://) to the sentinels too; the
 * sentinels' own password, when they require one, is separate. An ACL user given apart
 * (REDIS_USERNAME with REDIS_PASSWORD[_FILE]: the embedder's settlement user) wins over the URL's.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { EnvReader } from './env.js';
import { readOptionalFile } from './secrets.js';
import { settingDefault } from './settings.js';
// Relative file paths start at the repository (or an image's app folder), as `make up` writes them.
import { repoRoot } from './repo-root.js';

/** The Redis every process uses when nothing else is set (REDIS_URL's declared default): the usual local one. */
export const DEFAULT_REDIS_URL: string = settingDefault('REDIS_URL');

/** Where Redis is, and how to authenticate to it. */
export interface RedisTarget {
  readonly url: string;
  /** When non-empty, the primary of `sentinelName` as these sentinels report it. */
  readonly sentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly sentinelName?: string;
  /**
   * When non-empty, a Redis Cluster reached through these seed nodes (the URL's host is unused;
   * its user, password and scheme apply to every node). Exclusive with `sentinels`.
   */
  readonly clusterNodes?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** Sentinel's own `requirepass`, when set (the primary's password is in `url`). */
  readonly sentinelPassword?: string;
  /** PEM CA bundle to verify rediss:// servers with, instead of the system's CAs. */
  readonly tlsCa?: string;
  /** An ACL user given apart from the URL; with `password`, it replaces the URL's credentials. */
  readonly username?: string;
  readonly password?: string;
}

/** A target with the key prefix and the bound on every command: what a store opens. */
export interface RedisSettings extends RedisTarget {
  readonly prefix: string;
  readonly timeoutMs: number;
}

/**
 * Opens a connection to the target with the caller's options. For a Redis Cluster it is an
 * ioredis Cluster, typed as the Redis it stands in for: a command with keys goes to the primary
 * of their slot (every settlement call declares its organization's routing key, all of whose
 * keys share that slot); a command without keys goes to any node, so what must reach every
 * primary (FUNCTION LOAD, ACL SETUSER, SCAN) goes through primariesOf().
 */
export function openRedis(target: RedisTarget, options: RedisOptions): Redis {
  const tls = target.url.startsWith('rediss://') ? (target.tlsCa ? { ca: target.tlsCa } : {}) : undefined;
  const user = target.password ? { username: target.username, password: target.password } : {};
  if (target.clusterNodes && target.clusterNodes.length > 0) {
    const { retryStrategy, enableOfflineQueue, lazyConnect, ...nodeOptions } = options;
    const cluster = new Cluster(
      target.clusterNodes.map((n) => ({ ...n })),
      {
        // The cluster's own ready check (CLUSTER INFO) stands for each node's (INFO).
        redisOptions: { ...nodeOptions, ...credentials(target.url), ...user, ...(tls ? { tls } : {}), enableReadyCheck: false },
        ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
        ...(lazyConnect !== undefined ? { lazyConnect } : {}),
        ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null } : {}),
        scaleReads: 'master',
        // A MOVED or ASK reply (slots moved, a replica promoted) is followed, a few times at most.
        maxRedirections: 4,
        slotsRefreshTimeout: Math.max(1000, options.connectTimeout ?? 1000),
        // The topology asked again every 5 s: without it a node missing from the first CLUSTER
        // SLOTS (a replica the answering node had not yet learned by gossip) stays unknown until
        // a MOVED, and authz never gives it the embedder's user (a full-suite run met one).
        slotsRefreshInterval: 5_000,
      },
    );
    return cluster as unknown as Redis;
  }
  if (!target.sentinels || target.sentinels.length === 0) return new Redis(target.url, { ...options, ...(tls ? { tls } : {}), ...user });
  const callerRetry = options.retryStrategy;
  // A Sentinel that accepts but never answers (a frozen node) is given up after this; ioredis
  // counts a command's timeout from when it is queued, the connect and TLS handshake included, so
  // it is generous: 1 s failed a CLI's every Sentinel on a stalled machine (make test-images).
  const sentinelTimeoutMs = Math.max(SENTINEL_ANSWER_MS, options.commandTimeout ?? 0, options.connectTimeout ?? 0);
  const redis = new Redis({
    ...options,
    // A reconnect is how a client finds a promoted primary (the failover detector below only
    // listens while connected), so its delay adds to the fail-closed window of a failover: at
    // most 250 ms, not the caller's usual 1 s. It costs one Sentinel query and one refused
    // connect per client per try while no primary answers.
    ...(callerRetry
      ? {
          retryStrategy: (times: number) => {
            const delay = callerRetry(times);
            return typeof delay === 'number' ? Math.min(delay, SENTINEL_RECONNECT_MAX_MS) : delay;
          },
        }
      : {}),
    ...credentials(target.url),
    ...user,
    sentinels: target.sentinels.map((s) => ({ ...s })),
    name: target.sentinelName ?? 'ctg',
    role: 'master',
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(tls ? { tls, sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
    // Subscribes to the sentinels' +switch-master, so a promotion is noticed at once; a
    // sentinel connection of it that drops is made again within a second (ioredis: a minute,
    // blind to a failover meanwhile), and a sentinel that accepts but does not answer (a frozen
    // node) is given up after a bound, not waited on for ever.
    failoverDetector: true,
    sentinelReconnectStrategy: () => SENTINEL_RESUBSCRIBE_MS,
    sentinelCommandTimeout: sentinelTimeoutMs,
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A connection being dropped for a promoted primary is destroyed after 250 ms, not 2 s: a
    // hung primary never acknowledges its end.
    disconnectTimeout: SENTINEL_RECONNECT_MAX_MS,
    // A demoted primary answers writes with READONLY: drop that connection and ask the
    // sentinels again. The failed command is not resent (it surfaces as unavailable: fail closed).
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  });
  const stopWatching = watchPrimary(redis, target, tls, sentinelTimeoutMs);
  reconnectWhenEnded(redis, stopWatching);
  return redis;
}

/**
 * ioredis 5 ends a Sentinel client for good when its failover detector (a +switch-master)
 * disconnects it while it is still asking the sentinels for the primary: its connect rejects
 * "Connection is closed." and its status stays "end". make fleet's Redis scenarios hit it (an
 * embedder's store refused every command for the rest of the run). So an ended client connects
 * again, unless its owner closed it (disconnect() or quit()); then `onClosed` runs.
 */
function reconnectWhenEnded(redis: Redis, onClosed: () => void): void {
  let closedByOwner = false;
  const closed = () => {
    if (!closedByOwner) onClosed();
    closedByOwner = true;
  };
  const disconnect = redis.disconnect.bind(redis);
  redis.disconnect = (reconnect = false) => {
    if (!reconnect) closed();
    disconnect(reconnect);
  };
  const quit = redis.quit.bind(redis);
  redis.quit = ((...args: Parameters<Redis['quit']>) => {
    closed();
    return quit(...args);
  }) as Redis['quit'];
  redis.on('end', () => {
    if (closedByOwner) return;
    setTimeout(() => {
      if (!closedByOwner && redis.status === 'end') redis.connect().catch(() => undefined);
    }, ENDED_RECONNECT_MS).unref();
  });
}

/**
 * Asks the sentinels every second which primary they name, and reconnects the client when it is
 * no longer the one they named when it connected. ioredis learns of a failover from
 * +switch-master, a pub/sub message that reaches only the sentinel connections up at that
 * moment; one missed is never repeated. A client on a hung primary (frozen, or cut off with its
 * TCP connection still open) then times out every command, failing closed, until something else
 * breaks the connection: make test-images met authz still there 45 s after a promotion. With
 * the watch, a missed message costs at most a second (plus 5 s for each Sentinel that does not
 * answer). One connection to one sentinel at a time
 * (the next one after a failure), one short command a second; returns what stops it.
 */
function watchPrimary(redis: Redis, target: RedisTarget, tls: { ca?: string } | undefined, timeoutMs: number): () => void {
  const sentinels = target.sentinels ?? [];
  let next = 0;
  let sentinel: Redis | undefined;
  let asking = false;
  /** The primary the sentinels named when the client last became ready ('' until one answered). */
  let named = '';
  let readySince = 0;
  const ask = async (): Promise<string | undefined> => {
    if (!sentinel) {
      const { host, port } = sentinels[next % sentinels.length]!;
      const opened = new Redis({
        host,
        port,
        ...(target.sentinelPassword ? { password: target.sentinelPassword } : {}),
        ...(tls ? { tls } : {}),
        connectTimeout: timeoutMs,
        commandTimeout: timeoutMs,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        enableReadyCheck: false,
      });
      opened.on('error', () => undefined);
      sentinel = opened;
    }
    // The connection asked, held here: the watch may be stopped (the client closed) while the
    // question is out, which disconnects it and clears `sentinel` before the catch below runs.
    const asked = sentinel;
    try {
      const answer = await asked.call('SENTINEL', 'get-master-addr-by-name', target.sentinelName ?? 'ctg');
      return Array.isArray(answer) ? `${answer[0]}:${answer[1]}` : undefined;
    } catch {
      // This sentinel is down, frozen or refuses us: the next one, next time.
      asked.disconnect();
      if (sentinel === asked) {
        sentinel = undefined;
        next += 1;
      }
      return undefined;
    }
  };
  redis.on('ready', () => {
    named = '';
    readySince = Date.now();
  });
  const timer = setInterval(() => {
    if (asking || redis.status !== 'ready') return;
    asking = true;
    const asked = readySince;
    void ask()
      .then((primary) => {
        if (!primary || asked !== readySince || redis.status !== 'ready') return;
        // Sentinels name primaries by IP unless told to announce hostnames: then the
        // connection's own peer is compared; else the name they gave when it connected.
        const peer = `${redis.stream?.remoteAddress?.replace(/^::ffff:/, '')}:${redis.stream?.remotePort}`;
        const moved = isIP(primary.slice(0, primary.lastIndexOf(':'))) ? primary !== peer : named !== '' && primary !== named;
        if (named === '') named = primary;
        if (moved) redis.disconnect(true);
      })
      .finally(() => {
        asking = false;
      });
  }, PRIMARY_WATCH_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    sentinel?.disconnect();
    sentinel = undefined;
  };
}

/**
 * The connections a command must go to one by one to reach every primary: each primary of a
 * Redis Cluster, or the one connection itself.
 */
export function primariesOf(redis: Redis): Redis[] {
  const client: unknown = redis;
  return client instanceof Cluster ? client.nodes('master') : [redis];
}

/**
 * The connection that sends commands on `key`: on a Redis Cluster, the one to the primary the
 * client maps the key's slot to (null while it knows none), else `redis` itself. What a command
 * that must follow another on the same connection needs (WAIT after a write).
 */
export function connectionFor(redis: Redis, key: string): Redis | null {
  const client: unknown = redis;
  if (!(client instanceof Cluster)) return redis;
  const nodeKey = client.slots[keySlot(key)]?.[0];
  return client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey) ?? null;
}

/** A key's Redis Cluster slot: CRC16 (XMODEM) of its hash tag, or of the whole key, mod 16384. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  const close = open >= 0 ? bytes.indexOf(0x7d, open + 1) : -1;
  const part = close > open + 1 ? bytes.subarray(open + 1, close) : bytes;
  let crc = 0;
  for (const byte of part) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Every node of a Redis Cluster, replicas too (what per-node state such as ACL users needs), or `redis` itself. */
export function nodesOf(redis: Redis): Redis[] {
  const client: unknown = redis;
  return client instanceof Cluster ? client.nodes('all') : [redis];
}

/** True when `redis` is a Redis Cluster client (openRedis with cluster nodes). */
export function isCluster(redis: Redis): boolean {
  const client: unknown = redis;
  return client instanceof Cluster;
}

const SENTINEL_RECONNECT_MAX_MS = 250;

/** How soon a failover detector's dropped sentinel connection is made again. */
const SENTINEL_RESUBSCRIBE_MS = 1_000;

/** The least time a Sentinel is given to connect and answer before the next one is asked. */
const SENTINEL_ANSWER_MS = 5_000;

/** How often a Sentinel client asks which primary the sentinels name (watchPrimary). */
const PRIMARY_WATCH_MS = 1_000;

/** How soon an ended Sentinel client connects again: as soon as ioredis's own retries would. */
const ENDED_RECONNECT_MS = 100;

/** The user, password and database of a redis[s]:// URL (its host and port are the sentinels' business). */
function credentials(url: string): Pick<RedisOptions, 'username' | 'password' | 'db'> {
  const parsed = new URL(url);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : undefined;
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db !== undefined && Number.isInteger(db) ? { db } : {}),
  };
}

/**
 * The Redis settings, as every process reads them: REDIS_URL (default: the URL `make up` wrote
 * for its own Redis, REDIS_URL_FILE (declared default `.local/redis-url`); without that file, DEFAULT_REDIS_URL,
 * where a pod finds nothing and fails closed), REDIS_SENTINELS / REDIS_SENTINEL_NAME / REDIS_SENTINEL_PASSWORD_FILE,
 * REDIS_CLUSTER_NODES (a Redis Cluster's seed nodes),
 * REDIS_TLS_CA_FILE, REDIS_USERNAME with REDIS_PASSWORD or REDIS_PASSWORD_FILE,
 * REDIS_KEY_PREFIX and REDIS_TIMEOUT_MS.
 */
export function readRedisSettings(read: EnvReader): RedisSettings {
  const path = resolve(repoRoot, read.string('REDIS_URL_FILE'));
  const hostPorts = (name: 'REDIS_SENTINELS' | 'REDIS_CLUSTER_NODES') =>
    read.list(name).map((item) => {
      const match = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(item);
      if (!match || Number(match[2]) > 65535) read.problem(name, 'be host:port[,host:port…]', item);
      return { host: match?.[1] ?? '', port: Number(match?.[2] ?? 0) };
    });
  const sentinels = hostPorts('REDIS_SENTINELS');
  const clusterNodes = hostPorts('REDIS_CLUSTER_NODES');
  if (clusterNodes.length > 0 && sentinels.length > 0)
    read.problem('REDIS_CLUSTER_NODES', 'not be set with REDIS_SENTINELS (a cluster fails over by itself)');
  const username = read.optional('REDIS_USERNAME');
  if (username !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(username))
    read.problem('REDIS_USERNAME', 'be 1-64 of A-Z a-z 0-9 . _ -', username);
  const password =
    read.optional('REDIS_PASSWORD') ?? readOptionalFile(read, 'REDIS_PASSWORD_FILE', /^\S{1,512}$/, 'one line, no spaces', repoRoot);
  const sentinelPassword = readOptionalFile(read, 'REDIS_SENTINEL_PASSWORD_FILE', /^\S{1,512}$/, 'one line, no spaces', repoRoot);
  const tlsCa = readOptionalFile(read, 'REDIS_TLS_CA_FILE', /-----BEGIN CERTIFICATE-----/, 'a PEM certificate bundle', repoRoot);
  const fallback = settingDefault('REDIS_URL');
  const url = read.optional('REDIS_URL') ?? (existsSync(path) ? readFileSync(path, 'utf8').trim() : fallback);
  if (!/^rediss?:\/\/\S+$/.test(url)) read.problem('REDIS_URL', 'be a redis:// URL', url);
  return {
    url,
    sentinels,
    ...(clusterNodes.length > 0 ? { clusterNodes } : {}),
    sentinelName: read.matching('REDIS_SENTINEL_NAME', /^[A-Za-z0-9._-]{1,64}$/, '1-64 of A-Z a-z 0-9 . _ -'),
    ...(sentinelPassword !== undefined ? { sentinelPassword } : {}),
    ...(tlsCa !== undefined ? { tlsCa } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    prefix: read.matching('REDIS_KEY_PREFIX', /^[A-Za-z0-9:_.-]{1,64}$/, '1-64 of A-Z a-z 0-9 : _ . -'),
    timeoutMs: read.integer('REDIS_TIMEOUT_MS', 10, 60_000),
  };
}
