/**
 * One child process of the stack: started with its output appended to a log file (the canary
 * tests read those files), optionally inside a network namespace, stopped by its own pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export interface ChildOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** The whole environment the child sees (nothing is inherited implicitly). */
  readonly env: Readonly<Record<string, string>>;
  readonly logFile: string;
  readonly cwd?: string;
  /** Run inside this network namespace (`ip netns exec` execs in place, so the pid is the service's). */
  readonly netns?: string;
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Child {
  readonly name: string;
  readonly logFile: string;
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves once the process is gone, for whatever reason. */
  readonly gone: Promise<ExitInfo>;
  exited(): boolean;
  /** SIGTERM (or `signal`), then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number, signal?: NodeJS.Signals): Promise<ExitInfo>;
}

/** Spawns a child whose stdout and stderr are appended to its log file (restarts keep history). */
export function spawnChild(options: ChildOptions): Child {
  mkdirSync(dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, 'a');
  const [command, args] = options.netns
    ? ['ip', ['netns', 'exec', options.netns, options.command, ...options.args]]
    : [options.command, [...options.args]];
  const child = spawn(command, args, { cwd: options.cwd ?? process.cwd(), env: { ...options.env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let done = false;
  const gone = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
    // A command that cannot be spawned emits only 'error'.
    child.once('error', () => {
      done = true;
      resolve({ code: 127, signal: null });
    });
  });
  return {
    name: options.name,
    logFile: options.logFile,
    process: child,
    pid: child.pid ?? -1,
    gone,
    exited: () => done,
    async stop(graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM') {
      if (done) return gone;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const info = await gone;
      clearTimeout(timer);
      return info;
    },
  };
}

/** "exit code 1" / "signal SIGKILL", for messages. */
export function describeExit(info: ExitInfo): string {
  return info.signal ? `signal ${info.signal}` : `exit code ${String(info.code)}`;
}
