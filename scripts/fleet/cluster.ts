/**
 * The fleet's Redis as a Redis Cluster (`--redis cluster`, issue 28): six nodes, one a host,
 * made three primaries with a replica each by `redis-cli --cluster create`; authz, the
 * embedders (their own ACL user) and admin given REDIS_CLUSTER_NODES. Also what the run reads
 * of it: the topology (CLUSTER NODES), whether it is whole, each organization's usage stream on
 * its own primary, and the failover scenario (a primary killed; the cluster promotes its replica).
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { keySlot } from '../../contract/redis-target.js';
import { settlementKeys, settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { logFileOf, minimalEnv, redisComponent, type ComponentSpec } from '../stack/components.js';
import { waitFor } from '../stack/probes.js';
import type { Supervisor } from '../stack/supervisor.js';
import type { Host } from './netns.js';
import type { Outcome } from './load.js';

const run = promisify(execFile);

/** The cluster's nodes, one a host: the first three are made primaries, the last three their replicas. */
export const CLUSTER_HOSTS = ['redis-a', 'redis-b', 'redis-c', 'redis-d', 'redis-e', 'redis-f'] as const;
export const CLUSTER_PORT = 6379;

/**
 * How the cluster decides (scripts/fleet/README.md, "Redis Cluster", explains each value):
 * - `cluster-node-timeout 2000`: a primary that answers no ping for 2 s is suspected (PFAIL),
 *   failed (FAIL) once a majority of primaries suspect it, and its replica then runs for election
 *   after 0.5-1 s. 1 s promoted replicas of primaries merely slow on 2 busy shared cores.
 * - `cluster-require-full-coverage no`: while one primary's slots have no owner, the other
 *   primaries keep serving theirs (the default stops the whole cluster: every organization would
 *   fail closed, not only the lost primary's).
 * - `min-replicas-to-write 1` / `min-replicas-max-lag 2` as on one Redis: a primary cut off from
 *   its replica refuses the writes that do not WAIT.
 * - `repl-diskless-sync-delay 0`: the lost primary, back as a replica of the promoted one, is
 *   synced at once: until then the promoted primary has no replica, so it refuses writes and every
 *   record's WAIT (SETTLEMENT_MIN_REPLICAS=1) fails: its organizations stay failed closed.
 */
export const CLUSTER_SETTINGS = [
  '--cluster-enabled',
  'yes',
  '--cluster-node-timeout',
  '2000',
  '--cluster-require-full-coverage',
  'no',
  '--min-replicas-to-write',
  '1',
  '--min-replicas-max-lag',
  '2',
  '--repl-diskless-sync',
  'yes',
  '--repl-diskless-sync-delay',
  '0',
] as const;

/** One cluster node: redis-server with the cluster settings and the password, its nodes.conf in its own directory. */
export function clusterNodeComponent(host: Host, dir: string, logDir: string, password: string): ComponentSpec {
  const nodeDir = join(dir, host.name);
  mkdirSync(nodeDir, { recursive: true });
  return redisComponent({
    name: host.name,
    bind: host.address,
    port: CLUSTER_PORT,
    dir: nodeDir,
    logFile: logFileOf(logDir, host.name),
    netns: host.netns,
    extraArgs: [
      '--requirepass',
      password,
      '--masterauth',
      password,
      '--cluster-config-file',
      join(nodeDir, 'nodes.conf'),
      ...CLUSTER_SETTINGS,
    ],
  });
}

/** What a run needs to reach the cluster from the root namespace. */
export interface ClusterAccess {
  readonly hosts: Readonly<Record<string, Host>>;
  readonly password: string;
}

const redisCli = (c: ClusterAccess, address: string, ...args: string[]) =>
  run('redis-cli', ['-h', address, '-p', String(CLUSTER_PORT), ...args], {
    env: { ...minimalEnv(), REDISCLI_AUTH: c.password },
    timeout: 5_000,
  }).then((r) => r.stdout);

/** Shares the slots out: the first three hosts primaries, each with one of the others as its replica. */
export async function createCluster(c: ClusterAccess): Promise<void> {
  const nodes = CLUSTER_HOSTS.map((n) => `${(c.hosts[n] as Host).address}:${CLUSTER_PORT}`);
  await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], {
    env: { ...minimalEnv(), REDISCLI_AUTH: c.password },
    timeout: 60_000,
  });
}

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  readonly id: string;
  readonly address: string;
  readonly host: string;
  readonly primary: boolean;
  readonly failed: boolean;
  /** The id of its primary (replicas). */
  readonly primaryId?: string;
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** The topology as the node on `asked` sees it (CLUSTER NODES). */
export async function clusterNodes(c: ClusterAccess, asked: string): Promise<ClusterNode[]> {
  const text = await redisCli(c, (c.hosts[asked] as Host).address, 'CLUSTER', 'NODES');
  const byAddress = new Map(Object.values(c.hosts).map((h) => [h.address, h.name]));
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id = '', addr = '', flags = '', primaryId = '-', , , , , ...slots] = line.trim().split(' ');
      const address = addr.split('@')[0]?.split(':')[0] ?? '';
      const f = flags.split(',');
      return {
        id,
        address,
        host: byAddress.get(address) ?? address,
        primary: f.includes('master'),
        failed: f.includes('fail') || f.includes('noaddr'),
        ...(primaryId !== '-' ? { primaryId } : {}),
        slots: slots
          .filter((s) => /^\d+(-\d+)?$/.test(s))
          .map((s) => {
            const [from, to] = s.split('-').map(Number);
            return [from as number, (to ?? from) as number] as const;
          }),
      };
    });
}

/** The primary serving `slot` in `nodes` (undefined while none does). */
export function ownerOf(nodes: readonly ClusterNode[], slot: number): ClusterNode | undefined {
  return nodes.find((n) => n.primary && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b));
}

/** How many replicas the node at `address` has in sync (INFO replication: state=online). */
async function onlineReplicas(c: ClusterAccess, address: string): Promise<number> {
  const info = await redisCli(c, address, 'INFO', 'replication');
  return info.split('\n').filter((l) => /^slave\d+:.*state=online/.test(l)).length;
}

/**
 * Whole: every node says cluster_state:ok, no node is failed, three primaries share all 16384
 * slots, and each has a replica in sync (so it takes writes: min-replicas-to-write 1).
 */
export async function clusterWhole(c: ClusterAccess, hosts: readonly string[] = CLUSTER_HOSTS): Promise<boolean> {
  try {
    for (const h of hosts) {
      const info = await redisCli(c, (c.hosts[h] as Host).address, 'CLUSTER', 'INFO');
      if (!/^cluster_state:ok/m.test(info)) return false;
    }
    const nodes = await clusterNodes(c, hosts[0] as string);
    if (nodes.some((n) => n.failed)) return false;
    const primaries = nodes.filter((n) => n.primary && n.slots.length > 0);
    const covered = primaries.reduce((s, n) => s + n.slots.reduce((t, [a, b]) => t + b - a + 1, 0), 0);
    if (primaries.length !== 3 || covered !== 16384) return false;
    for (const p of primaries) if ((await onlineReplicas(c, p.address)) < 1) return false;
    return true;
  } catch {
    return false;
  }
}

/** A connection to one node, no cluster client: a command on a key of another node's slot fails (MOVED). */
function node(c: ClusterAccess, address: string): Redis {
  return new Redis({ host: address, port: CLUSTER_PORT, password: c.password, maxRetriesPerRequest: 1, connectTimeout: 3_000 });
}

/** Per organization: the 200s the clients saw against the usage records on the organization's own primary. */
export interface OrgUsage {
  readonly org: string;
  readonly slot: number;
  /** The host of the primary holding the organization's slot, where its records were read. */
  readonly primary: string;
  readonly returned: number;
  readonly returned_tokens: number;
  readonly records: number;
  readonly recorded_tokens: number;
  /**
   * 200s without a record, records recorded more than once, records of no 200. Of the last, those
   * of a request the client saw fail (`in_flight`: an embedder killed after the record, before its
   * 200 left; Envoy's retry of the same grant is refused, as a grant admits one request) are the
   * one charge without an answer a kill can leave, as test/e2e/usage-faults.test.ts allows; a
   * record of a request never sent or not from this organization is not.
   */
  readonly missing: number;
  readonly duplicates: number;
  readonly extra: number;
  readonly in_flight: number;
  readonly exact: boolean;
  /** The first few of each, to look into (request ids; a record's fields). */
  readonly missing_ids: readonly string[];
  readonly duplicate_ids: readonly string[];
  readonly extra_records: ReadonlyArray<Readonly<Record<string, string>>>;
}

/**
 * Reads each organization's usage stream (XRANGE) on the primary that holds its slot, with a
 * plain connection to that node, and compares it with the clients' 200s: every 200 recorded
 * exactly once, with the tokens it returned, and no record of a request that got no 200.
 */
export async function usageByOrg(
  c: ClusterAccess,
  prefix: string,
  orgs: readonly string[],
  outcomes: readonly Outcome[],
): Promise<OrgUsage[]> {
  const nodes = await clusterNodes(c, CLUSTER_HOSTS[0]);
  const nsOwner = ownerOf(nodes, keySlot(settlementNsKey(prefix)));
  if (!nsOwner) throw new Error('no primary serves the settlement namespace key');
  const nsConn = node(c, nsOwner.address);
  const ns = await nsConn.get(settlementNsKey(prefix)).finally(() => nsConn.disconnect());
  if (!ns) throw new Error('the settlement namespace is not set');
  const keys = settlementKeys(prefix, ns);
  const result: OrgUsage[] = [];
  for (const org of orgs) {
    const slot = keySlot(`{${org}}`);
    const owner = ownerOf(nodes, slot);
    if (!owner) throw new Error(`no primary serves ${org}'s slot ${slot}`);
    const conn = node(c, owner.address);
    const entries = await conn.xrange(keys.usageStream(org), '-', '+').finally(() => conn.disconnect());
    const recorded = new Map<string, number[]>();
    const records = new Map<string, Record<string, string>>();
    for (const [sid, fields] of entries) {
      const f: Record<string, string> = { sid };
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
      const id = f.request_id ?? '';
      recorded.set(id, [...(recorded.get(id) ?? []), Number(f.tokens)]);
      records.set(id, f);
    }
    const ok = outcomes.filter((o) => o.org === org && !o.bogus && o.status === 200);
    const okIds = new Set(ok.map((o) => o.id));
    const missingIds = ok.filter((o) => !recorded.has(o.id)).map((o) => o.id);
    const missing = missingIds.length;
    const tokensMatch = ok.every((o) => (recorded.get(o.id) ?? [o.tokens])[0] === o.tokens);
    const duplicateIds = [...recorded.entries()].filter(([, t]) => t.length > 1).map(([id]) => id);
    const duplicates = duplicateIds.length;
    const extraIds = [...recorded.keys()].filter((id) => !okIds.has(id));
    const failedIds = new Set(outcomes.filter((o) => o.org === org && !o.bogus && o.status !== 200).map((o) => o.id));
    const inFlight = extraIds.filter((id) => failedIds.has(id)).length;
    const extra = extraIds.length;
    const returnedTokens = ok.reduce((n, o) => n + o.tokens, 0);
    const recordedTokens = entries.reduce((n, [, fields]) => n + Number(fields[fields.indexOf('tokens') + 1]), 0);
    const inFlightTokens = extraIds
      .filter((id) => failedIds.has(id))
      .reduce((n, id) => n + (recorded.get(id) ?? []).reduce((a, b) => a + b, 0), 0);
    result.push({
      org,
      slot,
      primary: owner.host,
      returned: ok.length,
      returned_tokens: returnedTokens,
      records: entries.length,
      recorded_tokens: recordedTokens,
      missing,
      duplicates,
      extra,
      in_flight: inFlight,
      exact: missing === 0 && duplicates === 0 && extra === inFlight && tokensMatch && returnedTokens === recordedTokens - inFlightTokens,
      missing_ids: missingIds.slice(0, 5),
      duplicate_ids: duplicateIds.slice(0, 5),
      extra_records: extraIds.slice(0, 5).map((id) => records.get(id) as Record<string, string>),
    });
  }
  return result;
}

/** What the cluster failover measured. */
export interface ClusterFaultFacts {
  readonly faultAt: number;
  /** From the kill until a surviving node names the replica the primary of the slot. */
  readonly promotionMs: number;
  readonly loadAverage: number;
  /** The host killed and the host promoted. */
  readonly killed: string;
  readonly promoted: string;
  /** The organizations whose slots were on the killed primary (the fail-closed window is theirs). */
  readonly orgs: readonly string[];
}

/**
 * Kills (SIGKILL, kept down) the primary of `org`'s slot once the cluster is whole, waits until
 * the cluster promotes its replica (asked of a surviving primary), starts the old one again (it
 * rejoins as a replica of the promoted one: its nodes.conf's epoch is older) and waits until the
 * cluster is whole, every primary with a replica in sync.
 */
export async function clusterFailover(
  c: ClusterAccess,
  supervisors: Readonly<Record<string, Supervisor>>,
  org: string,
  orgs: readonly string[],
): Promise<ClusterFaultFacts> {
  await waitFor('the Redis Cluster to be whole', () => clusterWhole(c), 60_000);
  const slot = keySlot(`{${org}}`);
  const before = await clusterNodes(c, CLUSTER_HOSTS[0]);
  const victim = ownerOf(before, slot);
  if (!victim) throw new Error(`no primary serves ${org}'s slot`);
  const witness = before.find((n) => n.primary && n.id !== victim.id) as ClusterNode;
  const victimOrgs = orgs.filter((o) => ownerOf(before, keySlot(`{${o}}`))?.id === victim.id);
  const primary = supervisors[victim.host] as Supervisor;
  const loadAverage = loadavg()[0] ?? 0;
  const faultAt = Date.now();
  primary.signal('SIGKILL');
  await primary.stop();
  let promoted = '';
  await waitFor(
    `the cluster to promote ${victim.host}'s replica`,
    async () => {
      try {
        const owner = ownerOf(await clusterNodes(c, witness.host), slot);
        if (!owner || owner.id === victim.id) return false;
        promoted = owner.host;
        return true;
      } catch {
        return false;
      }
    },
    60_000,
  );
  const promotionMs = Date.now() - faultAt;
  await primary.start();
  const survivors = CLUSTER_HOSTS.filter((h) => h !== victim.host);
  await waitFor(`${victim.host} to rejoin as a replica in sync`, () => clusterWhole(c, [...survivors, victim.host]), 60_000);
  return { faultAt, promotionMs, loadAverage, killed: victim.host, promoted, orgs: victimOrgs };
}
