/**
 * Processes a bench run starts: spawned in their own process group, stopped on every exit
 * path (normal end, error, Ctrl-C), with their resident memory read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
export { freePort } from '../scripts/free-port.ts';

/** A started service process and the tail of its output (for start-up failures). */
export interface Service {
  name: string;
  child: ChildProcess;
  pid: number;
  output: () => string;
}

const started = new Set<Service>();

/** Stops one service: SIGTERM to its group, SIGKILL after a grace period. */
export async function stopService(service: Service): Promise<void> {
  started.delete(service);
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = new Promise<void>((done) => service.child.once('exit', () => done()));
  signalGroup(service.pid, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(service.pid, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** Stops every service still running (called from finally blocks and signal handlers). */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map(stopService));
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone: nothing to stop.
  }
}

// A bench run must never leave a server behind, even when interrupted.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const s of started) signalGroup(s.pid, 'SIGKILL');
    process.exit(130);
  });
}
process.once('exit', () => {
  for (const s of started) signalGroup(s.pid, 'SIGKILL');
});

/** Spawns `command args` with extra environment variables in a new process group. */
export function startService(name: string, command: string, args: string[], env: Record<string, string>): Service {
  const child = spawn(command, args, { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  const service: Service = { name, child, pid: child.pid, output: () => tail };
  started.add(service);
  return service;
}

/** Polls `probe` until it resolves true or `timeoutMs` passes; fails with the service's output. */
export async function waitUntil(service: Service | null, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service && service.child.exitCode !== null) {
      throw new Error(`${service.name} exited with ${service.child.exitCode}:\n${service.output()}`);
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${service?.name ?? 'probe'} not ready after ${timeoutMs} ms\n${service?.output() ?? ''}`);
}

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

// USER_HZ is 100 on every Linux build Node supports (getconf CLK_TCK).
const CLOCK_TICKS_PER_S = 100;
