/**
 * The fleet's network: one Linux bridge and one network namespace per host, each joined to the
 * bridge by a veth pair and given its own address on a /24 no other interface uses. Everything
 * is named after a short run id, and an owner file records the pid that made it, so a later run
 * can delete what a killed run left behind (and nothing else).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

const OWNERS = '/run/ctg-fleet';
const NS_PREFIX = 'ctgf';

/** One host of the fleet: its namespace and address. */
export interface Host {
  readonly name: string;
  readonly netns: string;
  readonly address: string;
}

/** The fleet's network, made by createNetwork. */
export interface Network {
  readonly id: string;
  readonly bridge: string;
  /** The bridge's own address: where the load client (in the root namespace) comes from. */
  readonly gatewayAddress: string;
  readonly hosts: Readonly<Record<string, Host>>;
  /** Deletes the namespaces (their processes killed first), the bridge and the owner file. Idempotent. */
  destroy(): void;
}

const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const tryIp = (...args: string[]): void => {
  try {
    ip(...args);
  } catch {
    /* already gone */
  }
};

/** Network namespaces, as `ip netns list` names them. */
function namespaces(): string[] {
  return ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills what runs in a namespace and deletes it. */
function deleteNamespace(ns: string): void {
  let pids: string[] = [];
  try {
    pids = ip('netns', 'pids', ns).split('\n').filter(Boolean);
  } catch {
    /* gone */
  }
  for (const pid of pids)
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone */
    }
  tryIp('netns', 'delete', ns);
}

function destroyRun(id: string): void {
  for (const ns of namespaces().filter((n) => n.startsWith(`${NS_PREFIX}${id}-`))) deleteNamespace(ns);
  tryIp('link', 'delete', `cfb${id}`);
  rmSync(join(OWNERS, id), { force: true });
}

/** Deletes the namespaces and bridges of earlier runs whose owner process is gone. Returns their ids. */
export function cleanStale(): string[] {
  const ids = new Set(
    namespaces()
      .filter((n) => n.startsWith(NS_PREFIX))
      .map((n) => n.slice(NS_PREFIX.length).split('-')[0] ?? ''),
  );
  mkdirSync(OWNERS, { recursive: true });
  for (const file of readdirSync(OWNERS)) ids.add(file);
  const stale = [...ids].filter((id) => {
    try {
      return !alive(Number(readFileSync(join(OWNERS, id), 'utf8')));
    } catch {
      return true;
    }
  });
  for (const id of stale) destroyRun(id);
  return stale;
}

// A 10.213.x.0/24 that no interface on this machine has an address in.
function freeSubnet(): string {
  const used = ip('-4', '-o', 'addr')
    .split('\n')
    .map((l) => /inet (10\.213\.\d+)\./.exec(l)?.[1])
    .filter(Boolean);
  for (let x = 1; x < 255; x++) if (!used.includes(`10.213.${x}`)) return `10.213.${x}`;
  throw new Error('no free 10.213.x.0/24 for the fleet');
}

/** Creates the bridge and one namespace per host name (in order: addresses .11, .12, …). */
export function createNetwork(hostNames: readonly string[]): Network {
  const id = randomBytes(2).toString('hex');
  mkdirSync(OWNERS, { recursive: true });
  writeFileSync(join(OWNERS, id), String(process.pid));
  const bridge = `cfb${id}`;
  const subnet = freeSubnet();
  const network: Network = { id, bridge, gatewayAddress: `${subnet}.1`, hosts: {}, destroy: () => destroyRun(id) };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    const hosts: Record<string, Host> = {};
    hostNames.forEach((name, i) => {
      hosts[name] = addHost(id, bridge, name, `${subnet}.${11 + i}`, i);
    });
    return { ...network, hosts };
  } catch (err) {
    network.destroy();
    throw err;
  }
}

function addHost(id: string, bridge: string, name: string, address: string, index: number): Host {
  const netns = `${NS_PREFIX}${id}-${name}`;
  const outside = `cf${id}${String(index).padStart(2, '0')}`;
  ip('netns', 'add', netns);
  ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
  ip('link', 'set', outside, 'master', bridge);
  ip('link', 'set', outside, 'up');
  ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
  ip('-n', netns, 'link', 'set', 'eth0', 'up');
  ip('-n', netns, 'link', 'set', 'lo', 'up');
  return { name, netns, address };
}
