/**
 * Processes a bench run starts, as supervised components of the stack module
 * (scripts/stack/), stopped on every exit path (normal end, error, Ctrl-C), with their
 * resident memory and CPU time read from /proc.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { ComponentSpec } from '../scripts/stack/components.ts';
import { Supervisor } from '../scripts/stack/supervisor.ts';
export { freePort } from '../scripts/free-port.ts';

/** A started service: its name, pid and log file. */
export interface Service {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  readonly supervisor: Supervisor;
}

const started = new Set<Service>();

// A measurement must not be skewed by a silent restart: a bench service that dies fails the run.
const NO_RESTART = { initialDelayMs: 0, maxDelayMs: 0, crashLimit: 0, windowMs: 1 };

/** Starts a component; resolves once it is ready (or fails naming its log file). */
export async function startService(spec: ComponentSpec): Promise<Service> {
  const supervisor = new Supervisor(spec, NO_RESTART);
  const service: Service = {
    name: spec.name,
    get pid() {
      return supervisor.pid ?? -1;
    },
    logFile: spec.logFile,
    supervisor,
  };
  started.add(service);
  try {
    await supervisor.start();
  } catch (err) {
    await stopService(service);
    throw new Error(`${spec.name} did not start: ${(err as Error).message}; see ${spec.logFile}`);
  }
  return service;
}

/** Stops one service: SIGTERM, SIGKILL after its grace period. */
export async function stopService(service: Service): Promise<void> {
  started.delete(service);
  await service.supervisor.stop();
}

/** Stops every service still running (called from finally blocks and signal handlers). */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map(stopService));
}

function killAll(): void {
  for (const s of started)
    if (s.pid > 0)
      try {
        process.kill(s.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
}

// A bench run must never leave a server behind, even when interrupted.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}
process.once('exit', killAll);

/** Resident memory now and its high-water mark, in MiB, from /proc/<pid>/status. */
export function residentMemory(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) / 1024;
  return { rssMb: field('VmRSS'), hwmMb: field('VmHWM') };
}

/** CPU time (user + system, all threads) a process has used so far, in ms, from /proc/<pid>/stat. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS_PER_S;
}

/**
 * Context switches so far, voluntary and involuntary, summed over a process's threads, from
 * /proc/<pid>/task/<tid>/status. A voluntary one is a sleep that something woke; an involuntary one,
 * a thread put off a core for another. Threads that exit between two readings drop out; the
 * services' threads live as long as they do.
 */
export function contextSwitches(pid: number): { voluntary: number; involuntary: number } {
  let voluntary = 0;
  let involuntary = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return { voluntary, involuntary };
}

// USER_HZ is 100 on every Linux build Node supports (getconf CLK_TCK).
const CLOCK_TICKS_PER_S = 100;
