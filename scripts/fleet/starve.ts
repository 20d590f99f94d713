/**
 * `--starve`: the fleet's Redis nodes (every redis-server and Sentinel) on one busy core, held
 * the way a Kubernetes CPU limit holds a pod. Each is pinned (sched_setaffinity, as taskset) to
 * the machine's last CPU and put in one cgroup v1 cpu group whose CFS quota is half a core; a
 * busy loop runs in the same group on the same core. So the group uses up its quota in every
 * 100 ms period and is then throttled: a Redis command or a Sentinel timer may wait ~50 ms for
 * the CPU, as on an overcommitted node. The busy loop runs in one of the fleet's namespaces, so
 * a killed run's loop dies with its namespaces (netns.ts, cleanStale).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { join } from 'node:path';

const CPU_ROOT = '/sys/fs/cgroup/cpu';
const PREFIX = 'ctg-fleet-';
const PERIOD_US = 100_000;
/** Half a core per period: the busy loop always takes its share, Redis gets the rest of it. */
const QUOTA_US = 50_000;

/** A starved core and its cgroup, made by startStarvation. */
export interface Starvation {
  readonly cgroup: string;
  readonly cpu: number;
  /** Puts a process (and the children it forks later) on the starved core and in the group. */
  hold(pid: number): void;
  /** Stops the busy loop and deletes the group (once its processes are gone). */
  stop(): Promise<void>;
}

/** Deletes the groups of earlier runs that have no process left (a run killed with SIGKILL). */
export function cleanStaleGroups(): void {
  if (!existsSync(CPU_ROOT)) return;
  for (const name of readdirSync(CPU_ROOT).filter((n) => n.startsWith(PREFIX))) {
    const dir = join(CPU_ROOT, name);
    if (readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim() === '') rmdirSync(dir);
  }
}

/** Makes the group, starts the busy loop in `netns`; throws where cgroup v1's cpu controller is missing. */
export function startStarvation(runId: string, netns: string): Starvation {
  if (!existsSync(join(CPU_ROOT, 'cpu.cfs_quota_us'))) throw new Error(`--starve needs the cgroup v1 cpu controller at ${CPU_ROOT}`);
  const cgroup = join(CPU_ROOT, `${PREFIX}${runId}`);
  mkdirSync(cgroup, { recursive: true });
  writeFileSync(join(cgroup, 'cpu.cfs_period_us'), String(PERIOD_US));
  writeFileSync(join(cgroup, 'cpu.cfs_quota_us'), String(QUOTA_US));
  const cpu = cpus().length - 1;
  const hold = (pid: number) => {
    try {
      // Into the group first: a fork (AOF rewrite, full sync) inherits both.
      writeFileSync(join(cgroup, 'cgroup.procs'), String(pid));
      execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    } catch {
      /* gone already (killed by a scenario): its supervisor's next start is held again */
    }
  };
  const loop: ChildProcess = spawn('ip', ['netns', 'exec', netns, 'sh', '-c', 'while :; do :; done'], { stdio: 'ignore' });
  if (loop.pid === undefined) throw new Error('--starve: the busy loop did not start');
  hold(loop.pid);
  return {
    cgroup,
    cpu,
    hold,
    stop: async () => {
      if (loop.exitCode === null && loop.signalCode === null) {
        const gone = once(loop, 'exit');
        loop.kill('SIGKILL');
        await gone;
      }
      try {
        rmdirSync(cgroup);
      } catch {
        /* a process still in it: cleanStaleGroups deletes it on the next run */
      }
    },
  };
}
