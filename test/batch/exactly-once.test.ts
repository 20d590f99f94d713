/**
 * Exactly once under faults, in process: the real engine (generated test model), Redis with the
 * batch functions, a directory store, and workers whose Redis or store calls fail at the worst
 * moments: after the result is written but before the commit, and before the result is written.
 * The segment is reclaimed after its lease by another worker; every line must come out once and be
 * billed once (one usage record of kind batch, the counts exact).
 */
import { issueGrant, testSettlementKeys } from '../support/settlement.js';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantClaims } from '../../contract/grant.js';
import { Batches } from '../../embedder/src/batch/batches.js';
import type { BatchFileStore } from '../../embedder/src/batch/file-store.js';
import { BatchFiles } from '../../embedder/src/batch/files.js';
import { Finalizer } from '../../embedder/src/batch/finalize.js';
import { openDirectoryStore } from '../../embedder/src/batch/fs-store.js';
import { BatchRunner } from '../../embedder/src/batch/runner.js';
import { parseKeyRing } from '../../embedder/src/batch/sealing.js';
import { batchLineExecutor } from '../../embedder/src/http/batch-line.js';
import { parseJsonBody } from '../../embedder/src/http/json-body.js';
import { openBatchStore } from '../../embedder/src/settlement/batch-store.js';
import { batchKeys } from '../../contract/redis/batch-keys.js';
import { settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { ensureTestModel, startTestEmbedder, TEST_MODEL_ID, type TestEmbedder } from '../support/embedder-app.js';
import { TEST_REDIS_URL } from '../support/redis-store.js';

const dir = mkdtempSync(join(tmpdir(), 'ctg-batch-once-'));
const ring = parseKeyRing(randomBytes(32).toString('hex'));
let embedder: TestEmbedder;
let store: BatchFileStore;
let queue: ReturnType<typeof openBatchStore>;
let files: BatchFiles;
const runners: BatchRunner[] = [];

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel());
  store = await openDirectoryStore(join(dir, 'store'));
  queue = openBatchStore({ url: TEST_REDIS_URL, prefix: embedder.authz.store.connection.keys.prefix, timeoutMs: 2000 });
  usageStream = (await testSettlementKeys(embedder.authz.store.connection.keys.prefix)).usageStream('test-org');
  files = new BatchFiles({ store, ring, limits: { maxBytes: 1e8, maxLines: 1e5 }, retentionSeconds: 3600, parseLine: parseJsonBody });
}, 60_000);

afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  queue?.close();
  await embedder?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A worker whose queue or store calls throw where `fail` says (each fault once per call site). */
function worker(faults: { beforeCommit?: number; beforeWrite?: number } = {}): BatchRunner {
  let commits = faults.beforeCommit ?? 0;
  let writes = faults.beforeWrite ?? 0;
  const faultyQueue = Object.create(queue) as typeof queue;
  faultyQueue.record = async (...args) => {
    if (commits-- > 0) throw new Error('killed before the commit');
    return queue.record(...args);
  };
  const faultyStore: BatchFileStore = {
    ...store,
    putPartIfAbsent: async (...args) => {
      if (writes-- > 0) throw new Error('killed before the write');
      return store.putPartIfAbsent(...args);
    },
  };
  const finalizer = new Finalizer({ store, ring, files, queue, retentionSeconds: 3600 });
  const runner = new BatchRunner(
    {
      store: faultyStore,
      ring,
      queue: faultyQueue,
      execute: batchLineExecutor(embedder.engine),
      finalizer,
      isReady: () => true,
      onError: () => undefined,
    },
    { workers: 2, leaseMs: 1500, pollMs: 20 },
  );
  runners.push(runner);
  return runner;
}

/** A create request's grant with its record, as authz's Check writes it. */
async function issuedGrant(): Promise<GrantClaims> {
  const claims = grant();
  await issueGrant(embedder.authz.store.connection.keys.prefix, claims);
  return claims;
}

const grant = (): GrantClaims => ({
  org: 'test-org',
  key: 'TESTKEYIDAAA',
  model: TEST_MODEL_ID,
  tpm: 1e6,
  uid: randomBytes(8).toString('hex'),
  exp: Date.now() + 60_000,
  method: 'POST',
  path: '/v1/batches',
});

async function* text(content: string): AsyncGenerator<Buffer> {
  yield Buffer.from(content);
}

async function runBatch(lines: number, workers: BatchRunner[]) {
  const content = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/embeddings', body: { model: TEST_MODEL_ID, input: `note ${i}` } }),
  ).join('\n');
  const input = await files.upload('test-org', 'in.jsonl', text(content));
  const batches = new Batches(queue, files, ring);
  const created = await batches.create(await issuedGrant(), {
    input_file_id: input.id,
    endpoint: '/v1/embeddings',
    completion_window: '24h',
  });
  for (const w of workers) w.start();
  const until = Date.now() + 60_000;
  for (;;) {
    const record = await batches.get('test-org', created.id);
    if (record.status === 'completed') return record;
    if (Date.now() > until) throw new Error(`still ${record.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The usage stream's name, under the settlement's namespace (read once the stack is up). */
let usageStream = '';

function usageOf(batch: string): string[] {
  const out = execFileSync('redis-cli', ['-u', TEST_REDIS_URL, '--no-raw', 'XRANGE', usageStream, '-', '+'], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return [...out.matchAll(/"request_id"\n\s*\d+\) "([^"]+)"/g)].map((m) => m[1]!).filter((id) => id.startsWith(`${batch}:`));
}

async function outputIds(fileId: string): Promise<string[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of files.content(await files.get('test-org', fileId))) chunks.push(chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
}

describe('expiry and retention', () => {
  it('a batch past its window expires: lines never run go to the error file as batch_expired, none billed', async () => {
    const content = Array.from({ length: 100 }, (_, i) =>
      JSON.stringify({ custom_id: `exp-${i}`, method: 'POST', url: '/v1/embeddings', body: { model: TEST_MODEL_ID, input: `note ${i}` } }),
    ).join('\n');
    const input = await files.upload('test-org', 'in.jsonl', text(content));
    const batches = new Batches(queue, files, ring);
    const created = await batches.create(await issuedGrant(), {
      input_file_id: input.id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const prefix = embedder.authz.store.connection.keys.prefix;
    const keys = batchKeys(
      prefix,
      execFileSync('redis-cli', ['-u', TEST_REDIS_URL, 'GET', settlementNsKey(prefix)], { encoding: 'utf8' }).trim(),
    );
    // Its 24-hour window, moved into the past (the record, the organization's open batches and the index).
    const past = String(Date.now() - 1);
    execFileSync('redis-cli', ['-u', TEST_REDIS_URL, 'HSET', keys.record('test-org', created.id), 'expires_at', past]);
    execFileSync('redis-cli', ['-u', TEST_REDIS_URL, 'ZADD', keys.open('test-org'), past, created.id]);
    execFileSync('redis-cli', ['-u', TEST_REDIS_URL, 'ZADD', keys.expiring, past, 'test-org']);
    const finalizer = new Finalizer({ store, ring, files, queue, retentionSeconds: 3600 });
    await finalizer.sweep();
    expect((await batches.get('test-org', created.id)).status).toBe('expired');
    // The workers drain the expired batch's segments without running them; then it ends.
    const runner = worker();
    runner.start();
    let record = await batches.get('test-org', created.id);
    for (let i = 0; i < 200 && !record.errorFileId; i++) {
      await new Promise((r) => setTimeout(r, 50));
      record = await batches.get('test-org', created.id);
    }
    await runner.stop();
    expect(record).toMatchObject({ status: 'expired', completed: 0, outputFileId: '' });
    const chunks: Buffer[] = [];
    for await (const chunk of files.content(await files.get('test-org', record.errorFileId))) chunks.push(chunk);
    const errors = Buffer.concat(chunks)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(errors).toHaveLength(100);
    expect(errors[0]).toMatchObject({ response: null, error: { code: 'batch_expired' } });
    expect(usageOf(created.id)).toHaveLength(0);
  }, 60_000);

  it('the sweep deletes files whose retention has passed, content first gone with the record', async () => {
    const input = await files.upload(
      'test-org',
      'old.jsonl',
      text(JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/embeddings', body: {} })),
    );
    await store.saveFile({ ...input, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    await new Finalizer({ store, ring, files, queue, retentionSeconds: 3600 }).sweep();
    expect(await store.getFile('test-org', input.id)).toBeNull();
    expect(await store.getPart(input.group, 0)).toBeNull();
  });
});

describe('exactly once', () => {
  it('a worker that dies after writing a result and before committing it: the next worker commits it, once', async () => {
    const record = await runBatch(200, [worker({ beforeCommit: 2 }), worker()]);
    expect(record).toMatchObject({ total: 200, completed: 200, failed: 0 });
    const ids = await outputIds(record.outputFileId);
    expect(ids.sort()).toEqual(Array.from({ length: 200 }, (_, i) => `line-${i}`).sort());
    const usage = usageOf(record.id);
    expect(usage).toHaveLength(200);
    expect(new Set(usage).size).toBe(200);
  }, 90_000);

  it('a worker that dies before writing a result: the line runs again elsewhere and is billed once', async () => {
    const record = await runBatch(150, [worker({ beforeWrite: 2 }), worker({ beforeCommit: 1 })]);
    expect(record).toMatchObject({ total: 150, completed: 150, failed: 0 });
    expect((await outputIds(record.outputFileId)).length).toBe(150);
    expect(new Set(usageOf(record.id)).size).toBe(150);
    expect(usageOf(record.id)).toHaveLength(150);
  }, 90_000);
});
