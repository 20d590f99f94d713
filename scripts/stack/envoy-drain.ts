/**
 * Drains an Envoy before it is stopped: its admin API starts a graceful drain of the listeners
 * (connections are told to close after their request; no new request is taken up), and the
 * stop waits until no downstream request is active, up to `graceMs`. Envoy itself exits at once
 * on SIGTERM, resetting whatever is in flight; this is what makes its stop graceful.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One admin call, on loopback or inside the component's network namespace. */
async function admin(adminPort: number, path: string, method: 'GET' | 'POST', netns?: string): Promise<string> {
  const url = `http://127.0.0.1:${adminPort}${path}`;
  if (!netns) {
    const res = await fetch(url, { method, signal: AbortSignal.timeout(2_000) });
    return res.text();
  }
  const { stdout } = await run('ip', ['netns', 'exec', netns, 'curl', '-fsS', '-m', '2', '-X', method, url]);
  return stdout;
}

/** Active downstream requests on the gateway listener (0 when the stat cannot be read). */
async function activeRequests(adminPort: number, netns?: string): Promise<number> {
  const text = await admin(adminPort, '/stats?filter=%5Ehttp%5C.gateway%5C.downstream_rq_active%24', 'GET', netns);
  return Number(/downstream_rq_active: (\d+)/.exec(text)?.[1] ?? 0);
}

/** Starts the graceful drain and resolves once nothing is in flight or `graceMs` has passed. */
export async function drainEnvoy(adminPort: number, graceMs: number, netns?: string): Promise<void> {
  await admin(adminPort, '/drain_listeners?graceful', 'POST', netns);
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && (await activeRequests(adminPort, netns)) > 0) {
    await new Promise((r) => setTimeout(r, 200));
  }
}
