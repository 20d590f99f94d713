/**
 * The image test's handle on podman: one network (the namespace), containers started as the
 * overlay's pods run (read-only root, the pod's user, no capabilities, no privilege escalation),
 * and their logs when something fails.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** `podman ARGS`, stdout as text; throws with stderr on failure. */
export function podman(args: readonly string[], input?: string): string {
  return execFileSync('podman', args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 16 << 20 });
}

/** What a container needs beyond the image: the pod's user, env, mounts, network names, ports. */
export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  readonly user: string;
  readonly env?: Readonly<Record<string, string>>;
  /** host path -> container path, read-only (Secrets, ConfigMaps, emptyDirs written before). */
  readonly mounts?: Readonly<Record<string, string>>;
  /** Writable mounts (an emptyDir an init container fills). */
  readonly writable?: Readonly<Record<string, string>>;
  /** DNS names on the network: the Services that select this pod. */
  readonly aliases?: readonly string[];
  /** container port -> published on 127.0.0.1 (a random host port). */
  readonly publish?: readonly number[];
  readonly args?: readonly string[];
  readonly entrypoint?: readonly string[];
  /** Run to completion (an init container) instead of detached. */
  readonly once?: boolean;
  /** Join this container's network namespace (a second container of the same pod). */
  readonly podOf?: string;
}

/** A podman network standing in for the namespace, and the containers started on it. */
export class PodNetwork {
  readonly name = `ctg-images-${randomBytes(4).toString('hex')}`;
  private readonly started: string[] = [];

  constructor() {
    podman(['network', 'create', this.name]);
  }

  /** Starts `spec` restricted as the manifests restrict every container; returns its name. */
  run(spec: ContainerSpec): string {
    const name = `${this.name}-${spec.name}`;
    podman(this.runArgs(spec));
    if (!spec.once) this.started.push(name);
    return name;
  }

  /** Runs `spec` to completion (`once`), restricted the same way; returns its standard output. */
  output(spec: ContainerSpec): string {
    return podman(this.runArgs({ ...spec, once: true }));
  }

  private runArgs(spec: ContainerSpec): string[] {
    const name = `${this.name}-${spec.name}`;
    const network = spec.podOf ? `container:${this.name}-${spec.podOf}` : this.name;
    const args = [
      'run',
      spec.once ? '--rm' : '-d',
      '--name',
      name,
      '--pull=never',
      '--network',
      network,
      '--read-only',
      '--tmpfs',
      '/tmp:rw,size=64m',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--user',
      spec.user,
    ];
    for (const alias of spec.aliases ?? []) args.push('--network-alias', alias);
    for (const [key, value] of Object.entries(spec.env ?? {})) args.push('--env', `${key}=${value}`);
    for (const [host, path] of Object.entries(spec.mounts ?? {})) args.push('--volume', `${host}:${path}:ro,Z`);
    for (const [host, path] of Object.entries(spec.writable ?? {})) args.push('--volume', `${host}:${path}:rw,Z`);
    for (const port of spec.publish ?? []) args.push('--publish', `127.0.0.1::${port}`);
    if (spec.entrypoint) args.push('--entrypoint', JSON.stringify(spec.entrypoint));
    return [...args, spec.image, ...(spec.args ?? [])];
  }

  /** The host port a container's port is published on. */
  hostPort(container: string, port: number): number {
    return Number(/:(\d+)\s*$/.exec(podman(['port', container, `${port}/tcp`]).trim())?.[1]);
  }

  /** The last lines of every container's log, for a failure message. */
  logs(): string {
    return this.started
      .map((name) => {
        try {
          return `--- ${name}\n${execFileSync('podman', ['logs', '--tail', '150', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })}`;
        } catch (error) {
          return `--- ${name}: ${(error as Error).message}`;
        }
      })
      .join('\n');
  }

  /** Removes one container at once (a pod lost with its node). */
  kill(name: string): void {
    podman(['rm', '-f', '-t', '0', `${this.name}-${name}`]);
    this.started.splice(this.started.indexOf(`${this.name}-${name}`), 1);
  }

  /** Removes the containers and the network. */
  remove(): void {
    for (const name of this.started.reverse()) {
      try {
        podman(['rm', '-f', '-t', '2', name]);
      } catch {
        /* already gone */
      }
    }
    try {
      podman(['network', 'rm', '-f', this.name]);
    } catch {
      /* already gone */
    }
  }
}

/** The admin CLI in the admin image (deploy/admin/build.json), compiled. */
const ADMIN_CLI = ['node', 'admin/src/cli/main.js'];
let adminRuns = 0;

/**
 * The admin CLI as a one-off container of the admin image on `net`, restricted as every pod is,
 * with `spec`'s settings and Secrets. A CLI that could not connect wrote nothing, so it is run
 * again, twice at most: on 2 shared cores busy with other builds its connection once took past
 * its 8 s wait (2 of 6 runs). Any other failure fails at once.
 */
export function runAdminCli(net: PodNetwork, spec: Omit<ContainerSpec, 'name' | 'args' | 'entrypoint'>, args: readonly string[]): string {
  for (let attempt = 1; ; attempt++) {
    adminRuns += 1;
    try {
      return net.output({ ...spec, name: `admin-cli-${adminRuns}`, entrypoint: ADMIN_CLI, args });
    } catch (error) {
      if (attempt === 3 || !/redis unavailable: not connected after/.test((error as Error).message)) throw error;
    }
  }
}
