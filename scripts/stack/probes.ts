/**
 * Readiness probes: how the stack knows a component is ready (a listening port, an HTTP 200,
 * the gateway's /health over TLS), and bounded polling of them.
 */
import { connect } from 'node:net';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';

/** A readiness check: resolves true when ready; false or a rejection means not yet. */
export type Probe = () => Promise<boolean>;

/** Something polled that can die meanwhile (so a crash is reported as such, not as a time-out). */
export interface Watched {
  readonly name: string;
  readonly logFile: string;
  exited(): boolean;
}

/** True once a TCP connection to host:port is accepted. */
export function tcpOpen(host: string, port: number): Probe {
  return () =>
    new Promise((resolve) => {
      const socket = connect(port, host);
      socket.setTimeout(1_000, () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
}

/** True when GET `url` answers 200 (plain HTTP, e.g. the embedder's /ready or Envoy's admin /ready). */
export function httpOk(url: string): Probe {
  return () =>
    new Promise((resolve) => {
      const req = httpRequest(url, { timeout: 2_000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
}

/** True when GET `url` answers 200 over TLS, trusting `ca` for the name `servername`. */
export function httpsOk(url: string, ca: string | Buffer, servername = 'localhost'): Probe {
  return () =>
    new Promise((resolve) => {
      const req = httpsRequest(url, { ca, servername, timeout: 2_000, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
}

/** Ready when every probe is. */
export function allOf(...probes: Probe[]): Probe {
  return async () => (await Promise.all(probes.map((p) => p().catch(() => false)))).every(Boolean);
}

/**
 * Polls `probe` until it returns true; fails after `timeoutMs` naming `what`, or at once naming
 * the watched process that died meanwhile.
 */
export async function waitFor(what: string, probe: Probe, timeoutMs: number, watched: readonly Watched[] = []): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = watched.find((p) => p.exited());
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}; see ${dead.logFile}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
