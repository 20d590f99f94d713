/**
 * A real Redis Cluster for a test file (scripts/stack/redis-cluster.sh), and what the cluster
 * tests ask of it: which primary serves a key, an organization and key written straight to the
 * cluster on a primary not yet used, and the embedder's ACL user present on a node. Each test file
 * owns a range of 100 ports and takes a random block of it, so two runs on one machine rarely meet.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { accessKeys, encodeKey, encodeOrg } from '../../contract/access-records.js';
import { hashSecret, mintKey } from '../../contract/api-key.js';
import { repoRoot } from '../../contract/repo-root.js';
import { waitFor } from './process.js';
import type { Stack } from './stack.js';

const SCRIPT = join(repoRoot, 'scripts/stack/redis-cluster.sh');

/** A started cluster: its nodes' ports (primaries first), a client, and how to stop it. */
export interface TestCluster {
  readonly ports: readonly number[];
  /** `host:port,…` as REDIS_CLUSTER_NODES takes it. */
  readonly nodes: string;
  readonly client: Cluster;
  /** The script's folder (each node's files: redis-<port>.pid, its log). */
  readonly dir: string;
  stop(): void;
}

/**
 * A cluster client once it is ready. A full run once hung in cluster-batch's beforeAll for its
 * whole 120 s with no message, after the script had seen cluster_state:ok on every node, and
 * this wait was the one without a bound: a fresh client is tried after 20 s, three in all, and
 * then the wait fails with a message.
 */
async function readyCluster(port: number): Promise<Cluster> {
  for (let attempt = 1; ; attempt++) {
    const client = new Cluster([{ host: '127.0.0.1', port }]);
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 20_000);
      client.once('ready', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (ready) return client;
    client.disconnect();
    if (attempt === 3) throw new Error(`the cluster client on port ${port} was not ready after 3 tries of 20 s`);
  }
}

/**
 * Starts `primaries` primaries (each with `replicas` replicas) on a random block of ports in
 * `[base, base + 100)`, and a cluster client once it is ready.
 */
export async function startTestCluster(name: string, base: number, primaries = 3, replicas = 0): Promise<TestCluster> {
  const size = primaries * (1 + replicas);
  const first = base + size * randomInt(Math.floor(100 / size));
  const ports = Array.from({ length: size }, (_, i) => first + i);
  const dir = mkdtempSync(join(tmpdir(), `ctg-${name}-`));
  execFileSync('bash', [SCRIPT, 'start', dir, ...ports.map(String)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, CLUSTER_REPLICAS: String(replicas) },
  });
  const client = await readyCluster(ports[0]!);
  return {
    ports,
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    client,
    dir,
    stop() {
      client.disconnect();
      execFileSync('bash', [SCRIPT, 'stop', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The port of the primary serving `key`'s slot (CLUSTER KEYSLOT, CLUSTER SLOTS). */
export async function primaryOfKey(cluster: Cluster, key: string): Promise<number> {
  const slot = Number(await cluster.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await cluster.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`slot ${slot} is not served`);
  return Number(range[2][1]);
}

/** An organization and an API key for it on a cluster stack, and the primary of its slot. */
export interface ClusterOrg {
  readonly org: string;
  readonly key: string;
  readonly port: number;
}

/**
 * An organization (with the served model and these limits) and a key for it, written straight to
 * the cluster as admin would, whose `{org}` slot is on a primary not in `taken` (then added).
 */
export async function orgOnAnotherPrimary(
  cluster: Cluster,
  stack: Stack,
  label: string,
  taken: Set<number>,
  limits: { rpm?: number; tpm?: number } = {},
): Promise<ClusterOrg> {
  for (;;) {
    const org = `${label}-${randomBytes(3).toString('hex')}`;
    const port = await primaryOfKey(cluster, `{${org}}`);
    if (taken.has(port)) continue;
    taken.add(port);
    const access = accessKeys(stack.svc.redisKeyPrefix);
    const now = Date.now();
    await cluster.hset(
      access.org(org),
      encodeOrg({
        id: org,
        endpoints: ['embeddings'],
        models: [stack.svc.modelId],
        rpm: limits.rpm ?? null,
        tpm: limits.tpm ?? null,
        createdAt: now,
      }),
    );
    const minted = mintKey('CTG');
    const hash = hashSecret(minted.id, minted.secret, readFileSync(stack.dirs.secretFile, 'utf8').trim());
    await cluster.hset(
      access.key(minted.id),
      encodeKey({ id: minted.id, org, name: label, hash, createdAt: now, expiresAt: null, revoked: false }),
    );
    return { org, key: minted.key, port };
  }
}

/** The embedder's Redis user of a stack (its name and password). */
export function embedderUser(stack: Stack): { username: string; password: string } {
  return { username: stack.dirs.settlementUser.username, password: readFileSync(stack.dirs.settlementUser.passwordFile, 'utf8').trim() };
}

/**
 * A connection to one node as the embedder's user, once that node has the user: authz writes it
 * on every node it knows at connect and checks every 30 s, so a node its cluster client had not
 * learned yet at start has it by the next check (one full-suite run met such a node).
 */
export async function asEmbedderOn(port: number, user: { username: string; password: string }): Promise<Redis> {
  await waitFor(
    `the embedder's user on ${port}`,
    async () => {
      const probe = new Redis({ port, ...user, enableReadyCheck: false, lazyConnect: true, maxRetriesPerRequest: 0 });
      probe.on('error', () => undefined);
      const ok = await probe.ping().then(
        (r) => r === 'PONG',
        () => false,
      );
      probe.disconnect();
      return ok;
    },
    40_000,
  );
  return new Redis({ port, ...user, enableReadyCheck: false });
}
