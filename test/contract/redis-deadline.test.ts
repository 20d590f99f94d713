/**
 * The Redis command timeout tells a slow Redis from a slow process (contract/redis-connection.ts):
 * a reply that arrived while the event loop was frozen past the timeout is still taken, and a
 * Redis that never answers is still failed. Real Redis, and a proxy that stalls it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnection, StoreUnavailableError, withDeadline } from '../../contract/redis-connection.js';
import { startRedisProxy, type RedisProxy } from '../support/redis-proxy.js';
import { TEST_REDIS_URL } from '../support/redis-store.js';

const TIMEOUT_MS = 100;

/** Holds the event loop, as a CPU limit's throttling or a long burst of work does. */
function freeze(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy: no timer, socket or promise callback runs meanwhile.
  }
}

function connection(url: string): RedisConnection {
  return new RedisConnection({ url, prefix: 'ctg-deadline-test:', timeoutMs: TIMEOUT_MS });
}

describe('Redis commands under a frozen event loop', () => {
  let direct: RedisConnection;
  let proxy: RedisProxy;
  let proxied: RedisConnection;

  beforeAll(async () => {
    direct = connection(TEST_REDIS_URL);
    const { hostname, port } = new URL(TEST_REDIS_URL);
    proxy = await startRedisProxy(hostname, Number(port));
    proxied = connection(proxy.url);
    await Promise.all([direct.ready(), proxied.ready()]);
  });

  afterAll(async () => {
    await Promise.all([direct.close(), proxied.close()]);
    await proxy.stop();
  });

  it('takes a reply that arrived while the process was frozen past the timeout', async () => {
    for (let i = 0; i < 5; i += 1) {
      const reply = direct.guard(() => direct.redis.ping());
      // Redis answers within a millisecond; this process reads the answer only after 3 timeouts.
      freeze(TIMEOUT_MS * 3);
      await expect(reply).resolves.toBe('PONG');
    }
  });

  it('still fails a command Redis never answers, with StoreUnavailableError', async () => {
    proxy.stall();
    await expect(proxied.guard(() => proxied.redis.ping())).rejects.toThrow(StoreUnavailableError);
    await expect(proxied.guard(() => proxied.redis.ping())).rejects.toThrow(/Command timed out/);
  });
});

describe('withDeadline', () => {
  it('passes a value or an error through, and times out what never settles', async () => {
    await expect(withDeadline(async () => 'done', TIMEOUT_MS)).resolves.toBe('done');
    await expect(withDeadline(() => Promise.reject(new Error('refused')), TIMEOUT_MS)).rejects.toThrow('refused');
    await expect(
      withDeadline(() => {
        throw new Error('thrown at once');
      }, TIMEOUT_MS),
    ).rejects.toThrow('thrown at once');
    await expect(withDeadline(() => new Promise(() => undefined), TIMEOUT_MS)).rejects.toThrow('Command timed out');
  });
});
