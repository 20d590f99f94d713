/**
 * How long the images take to start, measured (deploy/README.md → Images): after
 * scripts/images/build.sh, `npx tsx scripts/images/start-times.ts [runs]` starts each container
 * as the pods do (the base's settings, secrets as files, a read-only root, the pod's user) and
 * prints, per run, the time from the container's start (podman's StartedAt) to:
 *   render    the gateway's init container (envoy/render.js, authz image) has exited
 *   authz     authz accepts a TCP connection on its gRPC port
 *   embedder  the embedder answers GET /health (listening; the model loads after)
 *   admin     the admin service answers GET /health (it listens once Redis answered)
 * Each is a process start plus its module loading, so the difference between two builds is what
 * the image runs at start (a TypeScript transpiler or compiled JavaScript). Beside each wall time,
 * the CPU time the container used until then (its cgroup's cpuacct.usage; the init container's
 * user + sys from bash's `time`), which a machine loaded by other work inflates far less. A
 * measurement, not a test: nothing here asserts a time.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../contract/repo-root.js';
import { localImage } from './image-tag.js';

const runs = Number(process.argv[2] ?? 5);
const image = localImage;
const podman = (...args: string[]) => execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** KEY=VALUE lines of a base settings file, as the ConfigMap generator reads them. */
function envFile(name: string): string[] {
  return readFileSync(join(repoRoot, 'deploy/kubernetes/base', name), 'utf8')
    .split('\n')
    .filter((line) => /^[A-Z_]+=/.test(line));
}

/** The secrets every service reads, as files under `dir` (mounted at /etc/ctg). */
function writeSecrets(dir: string, redisPassword: string): void {
  const files: Record<string, string> = {
    'key-hash-secret/key-hash-secret': randomBytes(32).toString('hex'),
    'grant-secret/grant-secret': randomBytes(32).toString('hex'),
    'authz-caller-token/caller-token': randomBytes(24).toString('hex'),
    'metrics-token/metrics-token': randomBytes(24).toString('hex'),
    'redis/url': `redis://:${redisPassword}@redis:6379`,
    'redis/password': redisPassword,
    'audit-secret/audit-secret': randomBytes(32).toString('hex'),
    'admin-oidc/client-secret': randomBytes(24).toString('hex'),
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
    chmodSync(join(dir, path), 0o444);
  }
}

/** podman run's common flags: the pod's restrictions and the image's own user. */
function runArgs(net: string, name: string, envs: string[], secrets: string): string[] {
  const args = ['run', '--name', name, '--network', net, '--pull=never', '--read-only', '--tmpfs', '/tmp'];
  args.push('--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--volume', `${secrets}:/etc/ctg:ro,Z`);
  for (const env of envs) args.push('--env', env);
  return args;
}

/** A container's StartedAt or FinishedAt, in epoch milliseconds. */
const timeOf = (name: string, field: 'StartedAt' | 'FinishedAt') =>
  Date.parse(podman('inspect', '--format', `{{.State.${field}.Format "2006-01-02T15:04:05.000Z07:00"}}`, name));

/** CPU time a running container has used so far (its cgroup's cpuacct.usage), in milliseconds. */
function cpuMs(name: string): number {
  const cgroup = podman('inspect', '--format', '{{.State.CgroupPath}}', name);
  return Math.round(Number(readFileSync(`/sys/fs/cgroup/cpuacct${cgroup}/cpuacct.usage`, 'utf8')) / 1e6);
}

async function until(what: string, ready: () => Promise<boolean>): Promise<number> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await ready()) return Date.now();
    await sleep(10);
  }
  throw new Error(`${what} did not start within 60 s`);
}

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket.end() !== undefined));
    socket.on('error', () => resolve(false));
  });
const healthy = (port: number) =>
  fetch(`http://127.0.0.1:${port}/health`).then(
    (res) => res.ok,
    () => false,
  );
const hostPort = (name: string, port: number) => Number(/:(\d+)\s*$/.exec(podman('port', name, `${port}/tcp`))?.[1]);

async function measure(net: string, secrets: string, run: number): Promise<Record<string, number>> {
  const name = (what: string) => `${net}-${what}-${run}`;
  // The init container runs to completion: StartedAt to FinishedAt is its whole run.
  const render = name('render');
  const entry = JSON.parse(podman('image', 'inspect', '--format', '{{json .Config.Entrypoint}}', image('authz'))) as string[];
  const script = entry.includes('tsx') ? 'node --import tsx envoy/render.ts' : 'node envoy/render.js';
  const args = runArgs(net, render, envFile('gateway-render.env'), secrets);
  const timed = `TIMEFORMAT='%3U %3S'; time ${script} /run/envoy/envoy.yaml`;
  const rendered = spawnSync('podman', [...args, '--tmpfs', '/run/envoy', '--entrypoint', 'bash', image('authz'), '-c', timed], {
    encoding: 'utf8',
  });
  if (rendered.status !== 0) throw new Error(`render failed: ${rendered.stderr}`);
  const [user, sys] = rendered.stderr.trim().split('\n').at(-1)!.split(' ').map(Number) as [number, number];
  const times: Record<string, number> = {
    render: timeOf(render, 'FinishedAt') - timeOf(render, 'StartedAt'),
    'render cpu': Math.round((user + sys) * 1000),
  };
  podman('rm', '-f', render);

  const authz = name('authz');
  podman(...runArgs(net, authz, envFile('authz.env'), secrets), '-d', '--publish', '127.0.0.1::9191', image('authz'));
  times.authz = (await until('authz', () => tcpOpen(hostPort(authz, 9191)))) - timeOf(authz, 'StartedAt');
  times['authz cpu'] = cpuMs(authz);

  const embedder = name('embedder');
  podman(...runArgs(net, embedder, envFile('embedder.env'), secrets), '-d', '--publish', '127.0.0.1::8081', image('embedder'));
  times.embedder = (await until('embedder', () => healthy(hostPort(embedder, 8081)))) - timeOf(embedder, 'StartedAt');
  times['embedder cpu'] = cpuMs(embedder);

  // The checkpoint volume (AUDIT_ANCHOR_FILE's folder): a tmpfs here, written only at an append.
  const admin = name('admin');
  const anchor = '/var/lib/ctg-admin/audit:rw,mode=1777';
  podman(...runArgs(net, admin, envFile('admin.env'), secrets), '-d', '--tmpfs', anchor, '--publish', '127.0.0.1::9443', image('admin'));
  times.admin = (await until('admin', () => healthy(hostPort(admin, 9443)))) - timeOf(admin, 'StartedAt');
  times['admin cpu'] = cpuMs(admin);
  podman('rm', '-f', '-t', '2', authz, embedder, admin);
  return times;
}

async function main(): Promise<void> {
  const net = `ctg-start-${randomBytes(3).toString('hex')}`;
  const secrets = mkdtempSync(join(tmpdir(), 'ctg-start-'));
  chmodSync(secrets, 0o755);
  const password = randomBytes(12).toString('hex');
  writeSecrets(secrets, password);
  podman('network', 'create', net);
  try {
    const redis = ['--name', `${net}-redis`, '--network', net, '--network-alias', 'redis', '--pull=never'];
    podman('run', '-d', ...redis, 'localhost/ctg-test-redis:bookworm', '--requirepass', password, '--save', '');
    const rows: Record<string, number>[] = [];
    for (let run = 0; run < runs; run++) rows.push(await measure(net, secrets, run));
    for (const what of ['render', 'render cpu', 'authz', 'authz cpu', 'embedder', 'embedder cpu', 'admin', 'admin cpu']) {
      const values = rows.map((row) => row[what]!);
      const median = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
      console.log(`${what.padEnd(12)} median ${median} ms  (runs: ${values.join(', ')} ms)`);
    }
  } finally {
    for (const c of podman('ps', '-a', '--format', '{{.Names}}', '--filter', `name=${net}`).split('\n').filter(Boolean))
      podman('rm', '-f', c);
    podman('network', 'rm', '-f', net);
    rmSync(secrets, { recursive: true, force: true });
  }
}

await main();
