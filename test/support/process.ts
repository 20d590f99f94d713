/**
 * Child processes for the gateway tests: started with their output in a log file (the canary
 * test reads those files), stopped by their own pid, and waited for with bounded polling.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
export { freePort } from '../../scripts/free-port.js';

export interface ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  /** True once the process has exited, for whatever reason. */
  exited(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly logFile: string;
  readonly cwd?: string;
}

/** Starts a process whose stdout and stderr go to `logFile` (appended, so restarts keep history). */
export function startProcess(options: StartOptions): ManagedProcess {
  const fd = openSync(options.logFile, 'a');
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd ?? process.cwd(),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  let done = child.exitCode !== null;
  const gone = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      resolve();
    });
    child.once('error', () => {
      done = true;
      resolve();
    });
  });
  return {
    name: options.name,
    logFile: options.logFile,
    child,
    exited: () => done,
    async stop(graceMs = 5_000) {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(timer);
    },
  };
}

/** Starts a TypeScript entry point with tsx loaded in-process, so the pid is the service's own. */
export function startTsProcess(options: Omit<StartOptions, 'command' | 'args'> & { entry: string; args?: string[] }): ManagedProcess {
  return startProcess({
    ...options,
    command: process.execPath,
    args: ['--import', 'tsx', options.entry, ...(options.args ?? [])],
  });
}

/**
 * Polls `probe` until it returns true; fails after `timeoutMs` with `what` and, when given, the
 * process that died meanwhile (so a crash is reported as such instead of as a time-out).
 */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  watched: readonly ManagedProcess[] = [],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = watched.find((p) => p.exited());
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}; see ${dead.logFile}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves with `proc` once `ready` does; if `ready` fails, stops `proc` first so nothing leaks. */
export async function readyOrStopped(proc: ManagedProcess, ready: Promise<void>): Promise<ManagedProcess> {
  try {
    await ready;
    return proc;
  } catch (err) {
    await proc.stop();
    throw err;
  }
}
