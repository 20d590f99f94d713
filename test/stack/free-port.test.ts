/**
 * scripts/free-port.ts: listening ports for test and bench stacks come from below the kernel's
 * ephemeral range (an outgoing connection can take a port bind(0) handed out before the service
 * binds it; Envoy failed so in make test-e2e), never twice from one process, and bindable.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/free-port.js';

const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it('hands out distinct ports at or above 20000 and below the ephemeral range, each one bindable', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(ephemeralStart);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
