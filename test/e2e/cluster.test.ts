/**
 * The stack on a real Redis Cluster (issue 28, "Room to grow past one Redis primary"): three
 * primaries with a replica each, started by scripts/stack/redis-cluster.sh, authz and the
 * embedder (its own Redis user, set on every node; SETTLEMENT_MIN_REPLICAS=1) given
 * REDIS_CLUSTER_NODES, organizations chosen so that their hash slots land on three different
 * primaries:
 * - usage is exact on every primary: each organization's N requests answered 200 are N usage
 *   records with their request ids and tokens, in that organization's stream, on its primary;
 *   admin's usage reader (SCAN on every primary, streams merged) finds them all;
 * - a captured grant is served once; replayed it serves nothing;
 * - the embedder's Redis user is on every primary and can do nothing there but settle;
 * - a hard-stop budget with one request left serves exactly one of 50 concurrent requests;
 * - a record the organization's primary's replica does not confirm (paused) is voided: 503, no usage.
 * Organizations and keys are written straight to the cluster here; admin's own writes on a
 * cluster are test/e2e/cluster-admin.test.ts's.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetKey, encodeBudget } from '../../contract/budget.js';
import { GRANT_HEADER } from '../../contract/headers.js';
import { RedisConnection } from '../../contract/redis-connection.js';
import { settlementFunctionNames, settlementKeys, settlementNsKey, settlementRouteKey } from '../../contract/redis/settlement-keys.js';
import { UsageReports } from '../../admin/src/store/reports.js';
import { grantFromCheck } from '../support/grpc-authz.js';
import {
  asEmbedderOn,
  embedderUser,
  orgOnAnotherPrimary as orgOnAnotherPrimaryOf,
  startTestCluster,
  type TestCluster,
} from '../support/redis-cluster.js';
import { gatewayRequest, type GatewayResponse } from '../support/stack-client.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

// Ports 7100-7199 are this test's: three primaries, each with a replica.
let stack: Stack;
let testCluster: TestCluster;
let cluster: Cluster;
let PORTS: readonly number[];

beforeAll(async () => {
  testCluster = await startTestCluster('cluster', 7100, 3, 1);
  ({ client: cluster, ports: PORTS } = testCluster);
  // Every record must reach its primary's replica before its 200 (WAIT on that primary's connection).
  stack = await startStack(
    join(repoRoot, '.local/models/test'),
    {},
    { REDIS_CLUSTER_NODES: testCluster.nodes, SETTLEMENT_MIN_REPLICAS: '1' },
  );
});

afterAll(async () => {
  await stack?.stop();
  testCluster?.stop();
});

const orgOnAnotherPrimary = (label: string, taken: Set<number>, limits: { rpm?: number; tpm?: number } = {}) =>
  orgOnAnotherPrimaryOf(cluster, stack, label, taken, limits);

/** The organization's usage records, read from its stream on the cluster. */
async function usageOf(org: string): Promise<Array<{ request_id: string; tokens: number }>> {
  const ns = (await cluster.get(settlementNsKey(stack.svc.redisKeyPrefix)))!;
  const entries = await cluster.xrange(settlementKeys(stack.svc.redisKeyPrefix, ns).usageStream(org), '-', '+');
  return entries.map(([, fields]) => {
    const f = Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]!]] : [])));
    return { request_id: f.request_id!, tokens: Number(f.tokens) };
  });
}

const embed = (key: string, text: string): Promise<GatewayResponse> =>
  gatewayRequest(
    { host: 'localhost', port: stack.ports.gateway, ca: stack.ca },
    {
      method: 'POST',
      path: '/v1/embeddings',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: stack.svc.modelId, input: [text] }),
    },
  );

/** embed, retrying a 503 as a client is told to (many TLS handshakes at once on a shared machine). */
async function embedRetrying(key: string, text: string): Promise<GatewayResponse> {
  for (let attempt = 0; ; attempt += 1) {
    const answer = await embed(key, text);
    if (answer.status !== 503 || attempt === 10) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 300));
  }
}

/** The grant authz signs for `key` on a Check sent as Envoy sends it (with the caller token). */
const grantFor = (key: string): Promise<string> => grantFromCheck(`127.0.0.1:${stack.ports.authz}`, stack.dirs.callerTokenFile, key);

describe('the stack on a 3-primary Redis Cluster', () => {
  it("records usage exactly for organizations on three primaries, each in its organization's stream on its primary", async () => {
    const taken = new Set<number>();
    const orgs = [
      await orgOnAnotherPrimary('east', taken),
      await orgOnAnotherPrimary('west', taken),
      await orgOnAnotherPrimary('north', taken),
    ];
    expect(new Set(orgs.map((o) => o.port)).size).toBe(3);
    const N = 8;
    const answers = await Promise.all(
      orgs.map((o) => Promise.all(Array.from({ length: N }, (_, i) => embedRetrying(o.key, `cluster probe ${o.org} ${'a '.repeat(i)}`)))),
    );
    for (const [i, o] of orgs.entries()) {
      const served = answers[i]!.filter((a) => a.status === 200);
      expect(served, answers[i]!.map((a) => `${a.status} ${a.body.slice(0, 200)}`).join('\n')).toHaveLength(N);
      const usage = await usageOf(o.org);
      // One record per 200, with its request id and its tokens.
      expect(usage.map((u) => u.request_id).sort()).toEqual(served.map((a) => a.headers['x-request-id']).sort());
      expect(usage.reduce((sum, u) => sum + u.tokens, 0)).toBe(served.reduce((sum, a) => sum + (a.json().usage.total_tokens as number), 0));
      // The stream lives on the organization's primary (asked directly, no redirection).
      const node = new Redis({ port: o.port });
      const ns = (await cluster.get(settlementNsKey(stack.svc.redisKeyPrefix)))!;
      expect(await node.xlen(settlementKeys(stack.svc.redisKeyPrefix, ns).usageStream(o.org))).toBe(N);
      node.disconnect();
    }
    // admin's reader finds every organization's stream on every primary, in time order.
    const connection = new RedisConnection({
      url: 'redis://127.0.0.1',
      clusterNodes: [{ host: '127.0.0.1', port: PORTS[1]! }],
      prefix: stack.svc.redisKeyPrefix,
      timeoutMs: 2000,
    });
    await connection.ready();
    const read: string[] = [];
    for await (const entry of new UsageReports(connection).readUsage({})) read.push(entry.org);
    await connection.close();
    for (const o of orgs) expect(read.filter((org) => org === o.org)).toHaveLength(N);
  });

  it('serves a captured grant once; replayed it serves nothing', async () => {
    const o = await orgOnAnotherPrimary('replayed', new Set());
    const grant = await grantFor(o.key);
    const direct = (text: string) =>
      fetch(`http://127.0.0.1:${stack.ports.embedder}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [GRANT_HEADER]: grant },
        body: JSON.stringify({ model: stack.svc.modelId, input: [text] }),
      });
    const first = await direct('replayed grant');
    expect(first.status).toBe(200);
    const tokens = (await first.json()).usage.total_tokens;
    const replay = await direct('replayed grant');
    expect(replay.status).toBe(503);
    expect(await replay.json()).toMatchObject({ code: 'authorization_unavailable' });
    expect((await usageOf(o.org)).map((u) => u.tokens)).toEqual([tokens]);
  });

  it("the embedder's Redis user is on every primary, and there can only settle", async () => {
    const o = await orgOnAnotherPrimary('guarded', new Set());
    const prefix = stack.svc.redisKeyPrefix;
    const user = embedderUser(stack);
    const attempt = async (node: Redis, ...args: Array<string | number>) =>
      node.call(String(args[0]), ...args.slice(1)).then(
        (reply) => JSON.stringify(reply),
        (error: Error) => error.message,
      );
    for (const port of PORTS) {
      const node = await asEmbedderOn(port, user);
      expect(await node.ping()).toBe('PONG');
      for (const command of [
        ['GET', settlementNsKey(prefix)],
        ['HSET', budgetKey(prefix, o.org), 'hard_stop', '0'],
        ['SET', `${prefix}route:{${o.org}}`, '1'],
        ['FUNCTION', 'LIST'],
        ['KEYS', '*'],
        ['SCAN', 0],
      ])
        expect(await attempt(node, ...command), `${port}: ${command.join(' ')}`).toMatch(/^NOPERM/);
      node.disconnect();
    }
    // Through the cluster, as the embedder: its status function answers for the organization's slot.
    const embedder = new Cluster([{ host: '127.0.0.1', port: PORTS[2]! }], { redisOptions: { ...user, enableReadyCheck: false } });
    const status = settlementFunctionNames(prefix).status;
    expect(await embedder.call('FCALL_RO', status, 1, settlementRouteKey(prefix, o.org), randomUUID())).toBe('');
    embedder.disconnect();
  });

  it('a hard-stop budget with one request left serves exactly one of 50 concurrent requests', async () => {
    const o = await orgOnAnotherPrimary('budgeted', new Set(), { rpm: 10_000, tpm: 10_000_000 });
    const text = 'budget probe';
    const probe = await embedRetrying(o.key, text);
    expect(probe.status, probe.body).toBe(200);
    const tokens = probe.json().usage.total_tokens as number;
    await cluster.hset(
      budgetKey(stack.svc.redisKeyPrefix, o.org),
      encodeBudget({ monthlyTokens: 2 * tokens, hardStop: true, alertPercents: [] }),
    );
    const answers = await Promise.all(Array.from({ length: 50 }, () => embedRetrying(o.key, text)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(49);
    for (const r of refused) expect(r.json()).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect((await usageOf(o.org)).reduce((sum, u) => sum + u.tokens, 0)).toBe(2 * tokens);
  });

  it("voids a record its primary's replica does not confirm: 503 authorization_unavailable, no usage record", async () => {
    const o = await orgOnAnotherPrimary('unreplicated', new Set());
    const nodes = String(await cluster.call('CLUSTER', 'NODES'))
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const primaryId = nodes.find((n) => n[1]!.startsWith(`127.0.0.1:${o.port}@`))![0]!;
    const replicaPort = Number(/:(\d+)@/.exec(nodes.find((n) => n[3] === primaryId)![1]!)![1]);
    const replicaPid = Number(readFileSync(join(testCluster.dir, `redis-${replicaPort}.pid`), 'utf8'));
    const kept = await embedRetrying(o.key, 'replicated probe');
    expect(kept.status, kept.body).toBe(200);
    process.kill(replicaPid, 'SIGSTOP');
    let lost: GatewayResponse;
    try {
      lost = await embed(o.key, 'unreplicated probe');
    } finally {
      process.kill(replicaPid, 'SIGCONT');
    }
    expect(lost.status, lost.body).toBe(503);
    expect(lost.json()).toMatchObject({ code: 'authorization_unavailable' });
    expect((await usageOf(o.org)).map((u) => u.request_id)).toEqual([kept.headers['x-request-id']]);
  });
});
