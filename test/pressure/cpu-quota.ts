/**
 * Holds a process to a fraction of one CPU the way a Kubernetes CPU limit does: a cgroup with a
 * CFS quota (v1: cpu.cfs_quota_us per cpu.cfs_period_us; v2: cpu.max). The process runs for its
 * quota in each 100 ms period and is then frozen until the next one, which is what makes a
 * limited pod miss deadlines in bursts rather than simply run slower. Needs root (as the fleet
 * and image tests do); every thread of the process moves (cgroup.procs), and release() moves it
 * back and removes the group.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const V1 = '/sys/fs/cgroup/cpu';
const V2 = '/sys/fs/cgroup';
const PERIOD_US = 100_000;

export interface CpuQuota {
  /** The cgroup's directory. */
  readonly dir: string;
  /** CPU time the process has used so far, in milliseconds (from /proc). */
  usedMs(): number;
  /** Periods in which the group ran out of quota and was frozen. */
  throttledPeriods(): number;
  /** Moves the process back to the root group and removes this one. */
  release(): void;
}

/** Puts `pid` (all its threads) in a new cgroup limited to `millicores` of CPU (150 = 150m). */
export function limitCpu(pid: number, millicores: number): CpuQuota {
  const quotaUs = Math.round((PERIOD_US * millicores) / 1000);
  const name = `ctg-pressure-${randomBytes(4).toString('hex')}`;
  const v1 = existsSync(join(V1, 'cpu.cfs_quota_us'));
  if (!v1 && !existsSync(join(V2, 'cgroup.controllers'))) {
    throw new Error('no cgroup CPU controller at /sys/fs/cgroup/cpu (v1) or /sys/fs/cgroup (v2): the pressure tests need one, and root');
  }
  const root = v1 ? V1 : V2;
  const dir = join(root, name);
  mkdirSync(dir);
  if (v1) {
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
  } else {
    writeFileSync(join(dir, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
  }
  writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  const stat = (field: string): number => {
    const line = readFileSync(join(dir, 'cpu.stat'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field} `));
    return Number(line?.split(' ')[1] ?? 0);
  };
  return {
    dir,
    usedMs: () => {
      // utime and stime, fields 14 and 15, in clock ticks (100 per second on Linux).
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    },
    throttledPeriods: () => stat('nr_throttled'),
    release() {
      try {
        writeFileSync(join(root, 'cgroup.procs'), String(pid));
      } catch {
        // The process is gone already; its group is empty.
      }
      rmdirSync(dir);
    },
  };
}
