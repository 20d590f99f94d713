/**
 * The Batch API on a real Redis Cluster (issue 28): three primaries with a replica each, started by
 * scripts/stack/redis-cluster.sh, the stack (Envoy, authz, the embedder as its own Redis user)
 * given REDIS_CLUSTER_NODES, and organizations whose hash slots land on three different primaries.
 * - each organization's batch runs to completion through the gateway: one output line per input
 *   line, usage exact (one `batch` record per line, in the organization's stream, its tokens the
 *   output's), its batch state on its own primary, the global work index on one fixed slot;
 * - the embedder's Redis user, on every node, is refused every raw command on every batch key it
 *   could name (the old `b:*`/`bq:*`, today's under a guessed namespace) and on the organization
 *   and budget records, while its batch functions answer through the cluster.
 * Organizations and keys are written straight to the cluster (admin's writes there are
 * test/e2e/cluster-admin.test.ts's).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessKeys } from '../../contract/access-records.js';
import { batchFunctionNames, batchKeys } from '../../contract/redis/batch-keys.js';
import { settlementKeys, settlementNsKey, settlementRouteKey } from '../../contract/redis/settlement-keys.js';
import { waitFor } from '../support/process.js';
import {
  asEmbedderOn,
  embedderUser,
  orgOnAnotherPrimary as orgOnAnotherPrimaryOf,
  primaryOfKey,
  startTestCluster,
  type TestCluster,
} from '../support/redis-cluster.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

// Ports 7200-7299 are this test's (cluster.test.ts has 7100-7199): three primaries with a
// replica each.
const LINES = 12;

let stack: Stack;
let testCluster: TestCluster;
let cluster: Cluster;
let PORTS: readonly number[];
let ns: string;
const ran: Array<{ org: string; port: number; batch: string }> = [];

beforeAll(async () => {
  testCluster = await startTestCluster('cluster-batch', 7200, 3, 1);
  ({ client: cluster, ports: PORTS } = testCluster);
  stack = await startStack(
    join(repoRoot, '.local/models/test'),
    {},
    { REDIS_CLUSTER_NODES: testCluster.nodes, BATCH_POLL_MS: '50', BATCH_LEASE_MS: '3000' },
  );
  ns = (await cluster.get(settlementNsKey(stack.svc.redisKeyPrefix)))!;
});

afterAll(async () => {
  await stack?.stop();
  testCluster?.stop();
});

const orgOnAnotherPrimary = (label: string, taken: Set<number>) => orgOnAnotherPrimaryOf(cluster, stack, label, taken);

function multipart(content: string): { body: Buffer; type: string } {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="notes.jsonl"\r\n\r\n${content}\r\n--${boundary}--\r\n`,
  );
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/** Uploads a file of LINES lines and creates a batch over it; returns the batch id. */
async function createBatch(key: string, label: string): Promise<string> {
  const auth = { authorization: `Bearer ${key}` };
  const content = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      custom_id: `${label}-${i}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: stack.svc.modelId, input: `${label} note ${i}` },
    }),
  ).join('\n');
  const form = multipart(content);
  const file = await stack.request({ method: 'POST', path: '/v1/files', headers: { ...auth, 'content-type': form.type }, body: form.body });
  expect(file.status, file.body).toBe(200);
  const created = await stack.request({
    method: 'POST',
    path: '/v1/batches',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.json().id, endpoint: '/v1/embeddings', completion_window: '24h' }),
  });
  expect(created.status, created.body).toBe(200);
  return created.json().id as string;
}

/** Polls the batch until it ends; returns its final state. */
async function finished(key: string, batch: string): Promise<any> {
  let last: any;
  await waitFor(
    `batch ${batch} to end`,
    async () => {
      last = (await stack.request({ method: 'GET', path: `/v1/batches/${batch}`, headers: { authorization: `Bearer ${key}` } })).json();
      return ['completed', 'failed', 'expired', 'cancelled'].includes(last.status);
    },
    45_000,
  );
  return last;
}

describe('the Batch API on a 3-primary Redis Cluster', () => {
  it("completes a batch for organizations on three primaries: output whole, usage exact in each organization's stream", async () => {
    const taken = new Set<number>();
    const orgs = [
      await orgOnAnotherPrimary('east', taken),
      await orgOnAnotherPrimary('west', taken),
      await orgOnAnotherPrimary('north', taken),
    ];
    expect(new Set(orgs.map((o) => o.port)).size).toBe(3);
    const batches = await Promise.all(orgs.map((o) => createBatch(o.key, o.org)));
    const prefix = stack.svc.redisKeyPrefix;
    const usageKeys = settlementKeys(prefix, ns);
    const keys = batchKeys(prefix, ns);
    for (const [i, o] of orgs.entries()) {
      const batch = batches[i]!;
      const done = await finished(o.key, batch);
      expect(done, JSON.stringify(done)).toMatchObject({
        status: 'completed',
        request_counts: { total: LINES, completed: LINES, failed: 0 },
      });
      const output = await stack.request({
        method: 'GET',
        path: `/v1/files/${done.output_file_id}/content`,
        headers: { authorization: `Bearer ${o.key}` },
      });
      const rows = output.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rows.map((r) => r.custom_id).sort()).toEqual(Array.from({ length: LINES }, (_, n) => `${o.org}-${n}`).sort());
      const usage = (await cluster.xrange(usageKeys.usageStream(o.org), '-', '+')).map(([, f]) =>
        Object.fromEntries(f.flatMap((v, n) => (n % 2 === 0 ? [[v, f[n + 1]!]] : []))),
      );
      const billed = usage.filter((u) => u.batch === batch);
      expect(billed).toHaveLength(LINES);
      expect(new Set(billed.map((u) => u.request_id)).size).toBe(LINES);
      for (const u of billed) expect(u).toMatchObject({ org: o.org, kind: 'batch' });
      const outputTokens = rows.reduce((sum, r) => sum + (r.response.body.usage.total_tokens as number), 0);
      expect(billed.reduce((sum, u) => sum + Number(u.tokens), 0)).toBe(outputTokens);
      // The batch's state is on the organization's primary (asked directly, no redirection).
      const node = new Redis({ port: o.port });
      expect(await node.exists(keys.record(o.org, batch), keys.lines(o.org, batch), keys.list(o.org), keys.stream(o.org))).toBe(4);
      node.disconnect();
      ran.push({ org: o.org, port: o.port, batch });
    }
    // The global work index lives in one fixed slot; every organization left it once idle.
    const indexPort = await primaryOfKey(cluster, keys.active);
    expect(await primaryOfKey(cluster, keys.expiring)).toBe(indexPort);
    await waitFor('the work index to empty', async () => (await cluster.zcard(keys.active)) === 0, 10_000);
  }, 90_000);

  it("refuses the embedder's user every raw command on the batch keys on every node; its functions answer", async () => {
    expect(ran.length).toBeGreaterThan(0);
    const prefix = stack.svc.redisKeyPrefix;
    const user = embedderUser(stack);
    const { org, batch } = ran[0]!;
    const guessed = batchKeys(prefix, randomBytes(16).toString('hex'));
    const targets = [
      guessed.record(org, batch),
      guessed.lines(org, batch),
      guessed.segments(org, batch),
      guessed.list(org),
      guessed.stream(org),
      guessed.open(org),
      guessed.sealed(org),
      guessed.active,
      guessed.expiring,
      guessed.versions,
      guessed.seq,
      accessKeys(prefix).org(org),
      accessKeys(prefix).orgKeys(org),
      guessed.budget(org),
      `${prefix}b:{${org}}:${batch}`,
      `${prefix}b:{${org}}:index`,
      `${prefix}bq:${org}`,
      `${prefix}bq:active`,
      `${prefix}bq:open`,
      settlementNsKey(prefix),
    ];
    const commands = (key: string) => [
      ['HSET', key, 'status', 'in_progress'],
      ['HINCRBY', key, 'completed', '1'],
      ['XADD', key, '*', 'b', batch, 's', '0'],
      ['ZADD', key, '0', org],
      ['ZREM', key, org],
      ['SET', key, '1'],
      ['DEL', key],
      ['HGETALL', key],
    ];
    for (const port of PORTS) {
      const node = await asEmbedderOn(port, user);
      for (const key of targets)
        for (const command of commands(key)) {
          const reply = await node.call(String(command[0]), ...command.slice(1)).then(
            (r) => JSON.stringify(r),
            (error: Error) => error.message,
          );
          // NOPERM before anything else: a key of another node's slot would be MOVED only once permitted.
          expect(reply, `${port}: ${command.join(' ')}`).toMatch(/^NOPERM/);
        }
      node.disconnect();
    }
    // Through the cluster, as the embedder: the batch functions answer for the organization's slot.
    const embedder = new Cluster([{ host: '127.0.0.1', port: PORTS[1]! }], { redisOptions: { ...user, enableReadyCheck: false } });
    const fn = batchFunctionNames(prefix).fn;
    const record = (await embedder.call('FCALL_RO', fn.get, 1, settlementRouteKey(prefix, org), batch)) as string[];
    expect(record[record.indexOf('status') + 1]).toBe('completed');
    embedder.disconnect();
  }, 60_000);
});
