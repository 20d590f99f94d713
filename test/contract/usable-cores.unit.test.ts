import { describe, expect, it } from 'vitest';
import { cgroupCpuQuota, usableCores } from '../../contract/usable-cores.js';

/** A reader over fixed files: what a process would read in each kind of container. */
const files = (entries: Record<string, string>) => (path: string) => entries[path];

const V2_MOUNT = '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n';
const V1_MOUNTS = [
  '31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory',
  '32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct',
  '',
].join('\n');

describe('usable cores', () => {
  it('a cgroup v2 container limited to 2 CPUs on a 64-core node counts 2 (its cpu.max at its namespace root)', () => {
    const read = files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': V2_MOUNT, '/sys/fs/cgroup/cpu.max': '200000 100000\n' });
    expect(cgroupCpuQuota(read)).toBe(2);
    expect(usableCores(read, 64)).toBe(2);
  });

  it('rounds a fractional limit down, never below 1, and never above the cores it may run on', () => {
    const v2 = (max: string) =>
      files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': V2_MOUNT, '/sys/fs/cgroup/cpu.max': `${max}\n` });
    expect(usableCores(v2('250000 100000'), 64)).toBe(2);
    expect(usableCores(v2('15000 100000'), 64)).toBe(1);
    expect(usableCores(v2('800000 100000'), 4)).toBe(4);
  });

  it('no limit ("max", -1), no cgroup files, or unreadable numbers: the cores alone', () => {
    expect(
      usableCores(files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': V2_MOUNT, '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 8),
    ).toBe(8);
    expect(usableCores(files({}), 8)).toBe(8);
    expect(
      usableCores(files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': V2_MOUNT, '/sys/fs/cgroup/cpu.max': 'lots 100000' }), 8),
    ).toBe(8);
    const v1 = files({
      '/proc/self/cgroup': '5:memory:/\n4:cpu,cpuacct:/\n',
      '/proc/self/mountinfo': V1_MOUNTS,
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '-1\n',
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    });
    expect(usableCores(v1, 8)).toBe(8);
  });

  it("cgroup v1 as Kubernetes mounts it: the container's own group at the mount's top", () => {
    const pod = '/kubepods/burstable/pod1234/abcdef';
    const read = files({
      '/proc/self/cgroup': `5:memory:${pod}\n4:cpu,cpuacct:${pod}\n`,
      '/proc/self/mountinfo': V1_MOUNTS.replaceAll(' / /sys/fs/cgroup/', ` ${pod} /sys/fs/cgroup/`),
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '300000\n',
      '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    });
    expect(usableCores(read, 32)).toBe(3);
  });

  it('a limit on a parent group (a pod holding its containers) counts, the lowest along the path', () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods/pod1/ctr1\n',
      '/proc/self/mountinfo': V2_MOUNT,
      '/sys/fs/cgroup/kubepods/pod1/ctr1/cpu.max': 'max 100000',
      '/sys/fs/cgroup/kubepods/pod1/cpu.max': '150000 100000',
      '/sys/fs/cgroup/kubepods/cpu.max': '1600000 100000',
      '/sys/fs/cgroup/cpu.max': '400000 100000',
    });
    expect(cgroupCpuQuota(read)).toBe(1.5);
    expect(usableCores(read, 16)).toBe(1);
  });

  it('a hybrid host (v1 cpu beside an empty v2 hierarchy) reads the v1 quota', () => {
    const read = files({
      '/proc/self/cgroup': '1:cpu:/ctg probe\n0::/\n',
      '/proc/self/mountinfo': [
        '25 20 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu',
        '26 20 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
        '',
      ].join('\n'),
      '/sys/fs/cgroup/cpu/ctg probe/cpu.cfs_quota_us': '50000',
      '/sys/fs/cgroup/cpu/ctg probe/cpu.cfs_period_us': '100000',
    });
    expect(cgroupCpuQuota(read)).toBe(0.5);
    expect(usableCores(read, 2)).toBe(1);
  });

  it("reads mountinfo's escaped paths (a space is \\040) when matching the group to its mount", () => {
    const read = files({
      '/proc/self/cgroup': '1:cpu:/ctg probe/worker\n',
      '/proc/self/mountinfo': '25 20 0:22 /ctg\\040probe /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n',
      '/sys/fs/cgroup/cpu/worker/cpu.cfs_quota_us': '200000',
      '/sys/fs/cgroup/cpu/worker/cpu.cfs_period_us': '100000',
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '400000',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
    });
    expect(usableCores(read, 8)).toBe(2);
  });
});
