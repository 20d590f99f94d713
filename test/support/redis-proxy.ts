/**
 * A TCP proxy in front of Redis that a test can cut: stopping it closes every proxied
 * connection and refuses new ones, as a Redis that died would.
 */
import net from 'node:net';

export interface RedisProxy {
  readonly url: string;
  /** Keeps connections open but stops forwarding: Redis looks alive and never answers. */
  stall(): void;
  /** Destroys every open connection and stops listening. */
  stop(): Promise<void>;
}

/** Starts a proxy on a free loopback port forwarding to `target` (host:port). */
export async function startRedisProxy(targetHost = '127.0.0.1', targetPort = 6379): Promise<RedisProxy> {
  const sockets = new Set<net.Socket>();
  let stalled = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.on('data', (chunk) => void (stalled || upstream.write(chunk)));
    upstream.on('data', (chunk) => void (stalled || client.write(chunk)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    stall: () => {
      stalled = true;
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
