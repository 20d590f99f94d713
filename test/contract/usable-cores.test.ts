/**
 * contract/usable-cores.ts on this machine's real cgroups: a process held to one CPU by a cgroup
 * quota (as a Kubernetes limit holds a pod) counts one usable core, and the embedder's default
 * sessions follow; the same process unheld counts the cores. Node 20's availableParallelism()
 * counts the cores either way. Needs root and a cgroup CPU controller, as test/pressure does.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';
import { limitCpu } from '../pressure/cpu-quota.js';

const PROBE = `Promise.all([import('./contract/usable-cores.ts'), import('./embedder/src/config.ts')]).then(([cores, config]) => {
  const env = { GRANT_SECRET: 'usable-cores-test-grant-secret-0123456789', REDIS_URL_FILE: '/nonexistent/redis-url' };
  console.log(JSON.stringify({ usable: cores.usableCores(), node: require('node:os').availableParallelism(), sessions: config.loadConfig(env).modelSessions }));
});`;

/** Runs the probe, first moved into a cgroup held to `millicores` when given; its answer. */
async function probe(millicores?: number): Promise<{ usable: number; node: number; sessions: number }> {
  // The shell waits for a line before it becomes node, so node starts inside the group.
  const child = spawn('sh', ['-c', 'read go; exec node --import tsx -e "$PROBE"'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, PROBE },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const quota = millicores === undefined ? undefined : limitCpu(child.pid!, millicores);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  child.stdin.end('go\n');
  try {
    expect(await exited).toBe(0);
  } finally {
    quota?.release();
  }
  return JSON.parse(out);
}

describe('usable cores under a real cgroup CPU quota', () => {
  it('one CPU of quota: one usable core and one model session, though Node counts every core', async () => {
    const held = await probe(1000);
    expect(held).toEqual({ usable: 1, node: availableParallelism(), sessions: 1 });
  });

  it('no quota: the cores Node counts', async () => {
    const cores = availableParallelism();
    expect(await probe()).toEqual({ usable: cores, node: cores, sessions: cores });
  });
});
