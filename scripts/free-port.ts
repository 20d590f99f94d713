/**
 * Free loopback ports for the processes that tests and benchmarks start.
 *
 * Taken below the kernel's ephemeral range (ip_local_port_range), not with bind(0): a port bind(0)
 * hands out is one the kernel may give an outgoing connection's local end a moment later, before
 * the service that was told the port binds it. That happened in `make test-e2e`: Envoy exited with
 * "cannot bind '127.0.0.1:41051': Address already in use" while other suites' clients were
 * connecting. Connections never get a local port outside the range, so a port taken below it
 * stays free until another picker takes the same one (one in ~12,000, and never twice from this
 * process). Ports below 20000 are left alone: the Redis Cluster tests listen at 7100-7399 and
 * their cluster buses at 17100-17399.
 */
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const LOWEST = 20_000;
const TRIES = 50;
/** Ports this process has handed out: never twice (a stack's five must differ). */
const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range, or undefined where it cannot be read. */
function ephemeralStart(): number | undefined {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) ? first : undefined;
  } catch {
    return undefined;
  }
}

/** Resolves with the port bound and released, or undefined when it is taken. */
function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1 (for services that cannot report port 0). */
export async function freePort(): Promise<number> {
  const end = ephemeralStart();
  if (end !== undefined && end - LOWEST >= 1_000) {
    for (let i = 0; i < TRIES; i++) {
      const port = randomInt(LOWEST, end);
      if (handedOut.has(port)) continue;
      if ((await bindable(port)) === port) {
        handedOut.add(port);
        return port;
      }
    }
  }
  // Elsewhere (no such range, or no room below it): what the kernel picks.
  for (let i = 0; i < TRIES; i++) {
    const port = await bindable(0);
    if (port !== undefined && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free loopback port found');
}
