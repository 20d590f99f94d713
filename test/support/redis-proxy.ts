/**
 * A TCP proxy in front of Redis that a test can cut: stopping it closes every proxied
 * connection and refuses new ones, as a Redis that died would.
 */
import net from 'node:net';
import { TEST_REDIS_URL } from './redis-store.js';

export interface RedisProxy {
  readonly url: string;
  /** Keeps connections open but stops forwarding: Redis looks alive and never answers. */
  stall(): void;
  /** Holds every byte both ways, as a Redis stopped with SIGSTOP would; `resume` delivers them, late. */
  pause(): void;
  resume(): void;
  /** Destroys every open connection and stops listening. */
  stop(): Promise<void>;
}

const testRedis = new URL(TEST_REDIS_URL);

/** Starts a proxy on a free loopback port forwarding to `target` (host:port; by default the suite's TEST_REDIS_URL). */
export async function startRedisProxy(targetHost = testRedis.hostname, targetPort = Number(testRedis.port || 6379)): Promise<RedisProxy> {
  const sockets = new Set<net.Socket>();
  let stalled = false;
  let held: Array<() => void> | null = null;
  const forward = (to: net.Socket) => (chunk: Buffer) => {
    if (stalled) return;
    if (held) held.push(() => to.write(chunk));
    else to.write(chunk);
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    stall: () => {
      stalled = true;
    },
    pause: () => {
      held ??= [];
    },
    resume: () => {
      const pending = held ?? [];
      held = null;
      for (const deliver of pending) deliver();
    },
    stop: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening (bound, then released). */
export async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
