/**
 * How many CPUs this process may keep busy: the cores it may run on, capped by a cgroup CPU quota
 * (a Kubernetes or container CPU limit). Node 20's `os.availableParallelism()` (libuv 1.46) sees
 * CPU affinity but not a quota: in a pod limited to 2 CPUs on a 64-core node it counts 64, and
 * an embedder left to its defaults would open 64 model sessions (a copy of the model each) for
 * the quota to throttle. The quota is read as libuv 1.49 and later read it (the Node releases
 * built on it): quota ÷ period, rounded down, at least 1, the lowest along the cgroup's path up
 * to its mount (a limit on a parent, such as a Kubernetes pod's, holds its children too).
 * cgroup v1 (cpu.cfs_quota_us, cpu.cfs_period_us) and v2 (cpu.max) alike; on a hybrid host both
 * are read and the lower wins. Where nothing can be read (no cgroup, another OS), the cores alone.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { posix } from 'node:path';

/** A file's text, or undefined where it cannot be read. */
export type ReadText = (path: string) => string | undefined;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** The usable cores: `cores` (affinity) capped by the process's cgroup CPU quota; at least 1. */
export function usableCores(read: ReadText = readText, cores: number = availableParallelism()): number {
  const quota = cgroupCpuQuota(read);
  return Math.max(1, quota === undefined ? cores : Math.min(cores, Math.floor(quota)));
}

/** The lowest CPU quota (in CPUs, fractional) on this process's cgroup paths, or undefined. */
export function cgroupCpuQuota(read: ReadText = readText): number | undefined {
  const membership = read('/proc/self/cgroup');
  const mounts = read('/proc/self/mountinfo');
  if (!membership || !mounts) return undefined;
  // id:controllers:path, one line per hierarchy (v2's is 0 with no controllers).
  const groups = membership.split('\n').map((line) => line.split(':'));
  let lowest: number | undefined;
  for (const mount of cgroupMounts(mounts)) {
    const path = groups
      .find(([id, controllers]) => (mount.v2 ? id === '0' && controllers === '' : controllers?.split(',').includes('cpu')))
      ?.slice(2)
      .join(':');
    if (path === undefined) continue;
    // Inside a container the mount's root is the container's own cgroup: the path is made
    // relative to it; a path outside it (another namespace's view) stands for the mount's top.
    const inside = mount.root === '/' || path === mount.root || path.startsWith(`${mount.root}/`);
    const relative = inside ? posix.relative(mount.root, path) : '';
    for (let dir = posix.join(mount.point, relative); ; dir = posix.dirname(dir)) {
      const cpus = mount.v2
        ? quotaV2(read(`${dir}/cpu.max`))
        : ratio(read(`${dir}/cpu.cfs_quota_us`)?.trim(), read(`${dir}/cpu.cfs_period_us`)?.trim());
      if (cpus !== undefined && (lowest === undefined || cpus < lowest)) lowest = cpus;
      if (dir === mount.point || dir === '/') break;
    }
  }
  return lowest;
}

interface CgroupMount {
  readonly v2: boolean;
  /** The cgroup path the mount shows at its top. */
  readonly root: string;
  readonly point: string;
}

/** The cgroup2 mounts and the cgroup v1 mounts holding the cpu controller, from mountinfo. */
function cgroupMounts(mountinfo: string): CgroupMount[] {
  const found: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    // id parent major:minor root mount-point options [optional fields] - type source super-options
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const fields = before.split(' ');
    const [type, , superOptions = ''] = after.split(' ');
    const root = unescapeMountPath(fields[3] ?? '');
    const point = unescapeMountPath(fields[4] ?? '');
    if (type === 'cgroup2') found.push({ v2: true, root, point });
    else if (type === 'cgroup' && superOptions.split(',').includes('cpu')) found.push({ v2: false, root, point });
  }
  return found;
}

/** mountinfo writes a space, tab, newline or backslash in a path as \ and three octal digits. */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** cpu.max: "max 100000" (no limit) or "<quota> <period>" in microseconds. */
function quotaV2(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').trim().split(/\s+/);
  return ratio(quota, period);
}

/** Quota ÷ period from their decimal texts (v1's cpu.cfs_quota_us -1 and v2's "max": no limit). */
function ratio(quota: string | undefined, period: string | undefined): number | undefined {
  if (!quota || !period || !/^\d+$/.test(quota) || !/^\d+$/.test(period)) return undefined;
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? q / p : undefined;
}
