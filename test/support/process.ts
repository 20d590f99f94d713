/**
 * Child processes for the gateway tests, as a thin layer on the stack module
 * (scripts/stack/): output in a log file (the canary tests read those files), stopped by their
 * own pid, waited for with bounded polling.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnChild, type ChildOptions } from '../../scripts/stack/child.js';
import { minimalEnv } from '../../scripts/stack/components.js';
import { waitFor as waitForProbe, type Watched } from '../../scripts/stack/probes.js';
export { freePort } from '../../scripts/free-port.js';

/** A process (or a supervised component) a test started. */
export interface ManagedProcess extends Watched {
  /** SIGTERM, then SIGKILL after the grace period; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** A plain child process: its ChildProcess too. */
export interface ChildHandle extends ManagedProcess {
  readonly child: ChildProcess;
}

/** A test's process: the stack's child options, outside any network namespace. */
export type StartOptions = Omit<ChildOptions, 'netns'>;

/** Starts a process whose stdout and stderr go to `logFile` (appended, so restarts keep history). */
export function startProcess(options: StartOptions): ChildHandle {
  const child = spawnChild({ ...options, env: { ...minimalEnv(), ...options.env } });
  return {
    name: child.name,
    logFile: child.logFile,
    child: child.process,
    exited: () => child.exited(),
    stop: async (graceMs) => {
      await child.stop(graceMs);
    },
  };
}

/** Polls `probe` until it returns true; fails after `timeoutMs`, or at once if a watched process died. */
export function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, watched: readonly Watched[] = []): Promise<void> {
  return waitForProbe(what, probe, timeoutMs, watched);
}

/** Resolves with `proc` once `ready` does; if `ready` fails, stops `proc` first so nothing leaks. */
export async function readyOrStopped<P extends ManagedProcess>(proc: P, ready: Promise<void>): Promise<P> {
  try {
    await ready;
    return proc;
  } catch (err) {
    await proc.stop();
    throw err;
  }
}
