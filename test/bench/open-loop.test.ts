/**
 * The bench's open-loop client (bench/open-loop.ts) can stand for many clients: given several
 * source addresses, its connections take them in turn, so a flood from many addresses
 * (bench/flood-keys.ts --flood-sources) reaches the server from each of them. A real TLS
 * HTTP/2 server on loopback reads the peers' addresses.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { openSessions } from '../../bench/open-loop.js';
import { makeStackDir, removeStackDir } from '../support/stack.js';

const dirs = makeStackDir();
afterAll(() => removeStackDir(dirs));

describe('the open-loop client', () => {
  it('opens its connections from each given source address in turn', async () => {
    const server = createSecureServer({ cert: readFileSync(dirs.certFile), key: readFileSync(dirs.keyFile) });
    const peers: string[] = [];
    server.on('session', (session) => peers.push(session.socket.remoteAddress ?? ''));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const ca = readFileSync(dirs.caFile);
    try {
      const sessions = await openSessions(port, ca, 6, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
      const one = await openSessions(port, ca, 1, '127.0.0.5');
      await new Promise((r) => setTimeout(r, 100));
      for (const s of [...sessions, ...one]) s.close();
      expect(peers.map((p) => p.replace(/^::ffff:/, '')).sort()).toEqual([
        '127.0.0.2',
        '127.0.0.2',
        '127.0.0.3',
        '127.0.0.3',
        '127.0.0.4',
        '127.0.0.4',
        '127.0.0.5',
      ]);
    } finally {
      server.close();
    }
  });
});
