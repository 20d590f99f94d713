/** Readiness of a redis-server without a client library: PING over a raw socket answers +PONG. */
import { connect } from 'node:net';
import type { Probe } from './probes.js';

/** True when the Redis at host:port answers PING (an error reply such as NOAUTH also means it is up). */
export function redisAnswers(host: string, port: number): Probe {
  return () =>
    new Promise((resolve) => {
      const socket = connect(port, host);
      socket.setTimeout(1_000, () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (chunk) => {
        socket.destroy();
        // -LOADING means it is still reading its append-only file: not ready yet.
        resolve(chunk[0] === 0x2b || (chunk[0] === 0x2d && !chunk.toString().startsWith('-LOADING')));
      });
      socket.once('error', () => resolve(false));
    });
}
