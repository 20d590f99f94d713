/**
 * The stack's supervisor with real child processes: a component killed with SIGKILL is
 * restarted (new pid, ready again); one that keeps crashing is restarted with doubling delays
 * and then given up with a message that says so; stop() and restart() never count as crashes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ComponentSpec } from '../../scripts/stack/components.js';
import { minimalEnv } from '../../scripts/stack/components.js';
import { httpOk } from '../../scripts/stack/probes.js';
import { describeEvent, Supervisor, type SupervisorEvent } from '../../scripts/stack/supervisor.js';
import { freePort } from '../support/process.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-supervisor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A tiny HTTP server that is "ready" once it listens, and counts its own starts in a file.
const server = join(dir, 'server.mjs');
writeFileSync(
  server,
  `
import { createServer } from 'node:http';
import { appendFileSync } from 'node:fs';
appendFileSync(process.env.STARTS, 'start\\n');
createServer((_req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => { appendFileSync(process.env.STARTS, 'drained\\n'); process.exit(0); });
`,
);

function spec(name: string, args: string[], env: Record<string, string>, ready = async () => true): ComponentSpec {
  return {
    name,
    command: process.execPath,
    args,
    env: { ...minimalEnv(), ...env },
    logFile: join(dir, `${name}.log`),
    ready,
    readyTimeoutMs: 20_000,
    stopGraceMs: 5_000,
  };
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe('Supervisor', () => {
  it('restarts a component killed with SIGKILL and waits until it is ready again', async () => {
    const port = await freePort();
    const starts = join(dir, 'starts-a');
    writeFileSync(starts, '');
    const events: SupervisorEvent[] = [];
    const sup = new Supervisor(
      spec('server', [server], { PORT: String(port), STARTS: starts }, httpOk(`http://127.0.0.1:${port}/`)),
      { initialDelayMs: 50, maxDelayMs: 1_000, crashLimit: 3, windowMs: 60_000 },
      (e) => events.push(e),
    );
    await sup.start();
    const first = sup.pid as number;
    const readyAgain = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (events.filter((e) => e.kind === 'ready').length === 2) {
          clearInterval(poll);
          resolve();
        }
      }, 20);
    });
    process.kill(first, 'SIGKILL');
    await readyAgain;
    expect(sup.state).toBe('ready');
    expect(sup.pid).not.toBe(first);
    expect(gone(first)).toBe(true);
    expect(events.map((e) => e.kind)).toEqual(['started', 'ready', 'crashed', 'started', 'ready']);
    expect(events[2]).toMatchObject({ kind: 'crashed', exit: 'signal SIGKILL', restartInMs: 50 });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('ok');

    // A rolling restart drains (SIGTERM) and is no crash; stop() leaves nothing running.
    const second = sup.pid as number;
    await sup.restart();
    expect(sup.pid).not.toBe(second);
    const last = sup.pid as number;
    await sup.stop();
    expect(gone(last)).toBe(true);
    expect(sup.state).toBe('stopped');
    expect(events.filter((e) => e.kind === 'crashed')).toHaveLength(1);
    expect(readFileSync(starts, 'utf8').split('\n').filter(Boolean)).toEqual(['start', 'start', 'drained', 'start', 'drained']);
  }, 60_000);

  it('backs off exponentially on repeated crashes, then gives up saying it keeps crashing', async () => {
    const starts = join(dir, 'starts-b');
    writeFileSync(starts, '');
    const events: SupervisorEvent[] = [];
    const crasher = spec(
      'crasher',
      ['-e', `require('fs').appendFileSync(${JSON.stringify(starts)}, 'x'); process.exit(3)`],
      {},
      async () => false,
    );
    const sup = new Supervisor(crasher, { initialDelayMs: 20, maxDelayMs: 80, crashLimit: 4, windowMs: 60_000 }, (e) => events.push(e));
    const error = await sup.start().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(
      /^crasher keeps crashing: 5 exits within 60 s \(last: exit code 3\); not restarting it again\. See .*crasher\.log$/,
    );
    // Doubling delays, capped at maxDelayMs.
    expect(events.filter((e) => e.kind === 'crashed').map((e) => (e as { restartInMs: number }).restartInMs)).toEqual([20, 40, 80, 80]);
    expect(events.at(-1)?.kind).toBe('gave-up');
    expect(describeEvent(events.at(-1) as SupervisorEvent)).toBe(error?.message);
    expect(sup.state).toBe('failed');
    expect(readFileSync(starts, 'utf8')).toBe('xxxxx');
    // Given up means given up: nothing is started again later.
    await new Promise((r) => setTimeout(r, 300));
    expect(readFileSync(starts, 'utf8')).toBe('xxxxx');
  }, 30_000);
});
