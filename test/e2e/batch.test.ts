/**
 * The Batch API through the whole gateway (real Envoy over HTTPS, authz, Redis, the default
 * model, the embedder as its restricted Redis user), driven by the official OpenAI SDKs as a user
 * runs them: upload, create, poll, download, list, cancel, delete. Plus what only the edge can
 * show: an upload larger than the 1 MiB body buffer streams through, a keyless upload is refused
 * on its headers, and each embedded line is one usage record of kind `batch`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementKeys, settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { orgWithKey } from '../support/stack-admin.js';
import { redisUrl, repoRoot, startStack, type Stack } from '../support/stack.js';
import { runBatchSnippet } from '../support/readme-batch.js';

const run = promisify(execFile);
const LINES = 50;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack(undefined, {}, { BATCH_POLL_MS: '50', BATCH_LEASE_MS: '3000' });
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

const env = (label: string) => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  NODE_EXTRA_CA_CERTS: stack.dirs.caFile,
  GATEWAY_BASE_URL: stack.baseUrl,
  GATEWAY_CA: stack.dirs.caFile,
  MODEL: stack.svc.modelId,
  KEY: orgWithKey(stack, label).key,
  LINES: String(LINES),
});

/** The usage stream's batch records for `batch`: one per embedded line. */
function batchUsage(batch: string): string[] {
  const prefix = stack.svc.redisKeyPrefix;
  // The usage stream lives under the settlement's namespace, which authz created (a full user reads it).
  const ns = execFileSync('redis-cli', ['-u', redisUrl, '--raw', 'GET', settlementNsKey(prefix)], { encoding: 'utf8' }).trim();
  // One stream per organization (settlement-keys.ts): every one of them, found by SCAN.
  const streams = execFileSync(
    'redis-cli',
    ['-u', redisUrl, '--raw', '--scan', '--pattern', settlementKeys(prefix, ns).usageStreamPattern],
    {
      encoding: 'utf8',
    },
  )
    .split('\n')
    .filter(Boolean);
  const out = streams
    .map((stream) =>
      execFileSync('redis-cli', ['-u', redisUrl, '--no-raw', 'XRANGE', stream, '-', '+'], {
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      }),
    )
    .join('\n');
  return [...out.matchAll(/"request_id"\n\s*\d+\) "([^"]+)"/g)].map((m) => m[1]!).filter((id) => id.startsWith(`${batch}:`));
}

function expectReport(report: any) {
  expect(report.uploaded).toMatchObject({ purpose: 'batch', filename: 'notes.jsonl' });
  expect(report.created).toBe('in_progress');
  expect(report.done).toEqual({ status: 'completed', counts: { total: LINES, completed: LINES, failed: 0 } });
  expect([...report.customIds].sort()).toEqual(Array.from({ length: LINES }, (_, i) => `note-${i}`).sort());
  expect(new Set(report.dims)).toEqual(new Set([1024]));
  expect(report.cancelling).toBe('cancelling');
  expect(report.cancelled.status).toBe('cancelled');
  expect(report.cancelled.counts.completed).toBeLessThan(40 * LINES);
  expect(report.deleted).toBe(true);
  expect(report.afterDelete).toBe(404);
  // Billed once per line, as batch work; the cancelled batch only for the lines it completed.
  expect(new Set(batchUsage(report.batchId)).size).toBe(LINES);
  expect(batchUsage(report.batchId)).toHaveLength(LINES);
  expect(batchUsage(report.secondId)).toHaveLength(report.cancelled.counts.completed);
}

describe('the Batch API with the official SDKs', () => {
  it('the OpenAI Node SDK: upload, create, poll, download, list, cancel, delete', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/e2e/sdk/batch-node.ts')], {
      cwd: repoRoot,
      env: env('batch-node'),
    });
    const report = JSON.parse(stdout);
    expectReport(report);
    expect(report.listedIds).toContain(report.batchId);
    expect(report.fileIds).toContain(report.uploaded.id);
  }, 180_000);

  it('the OpenAI Python SDK: upload, create, poll, download, cancel, delete', async () => {
    const { stdout } = await run(join(repoRoot, '.venv/bin/python'), [join(repoRoot, 'test/e2e/sdk/batch_python.py')], {
      cwd: repoRoot,
      env: env('batch-py'),
    });
    expectReport(JSON.parse(stdout));
  }, 180_000);
});

function multipart(content: Buffer): { body: Buffer; type: string } {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), content, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

describe('the "Re-indexing a corpus" snippets of docs/batch.md, as written', () => {
  for (const name of ['batch-python', 'batch-node'] as const) {
    it(name, async () => {
      const result = await runBatchSnippet(
        repoRoot,
        name,
        { baseUrl: stack.baseUrl, caFile: stack.dirs.caFile },
        orgWithKey(stack, name).key,
        {
          python: join(repoRoot, '.venv/bin/python'),
          nodeModulesDir: repoRoot,
        },
      );
      expect(result.documented).toEqual(['completed 2', '1024']);
      expect(result.printed).toEqual(result.documented);
    }, 120_000);
  }
});

describe('uploads at the edge', () => {
  it('an upload of several MiB streams past the 1 MiB body buffer', async () => {
    const key = orgWithKey(stack, 'batch-big').key;
    const line = (i: number) =>
      JSON.stringify({
        custom_id: `n${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: stack.svc.modelId, input: 'x'.repeat(400) },
      });
    const content = Buffer.from(Array.from({ length: 8000 }, (_, i) => line(i)).join('\n'));
    expect(content.length).toBeGreaterThan(3 * 1024 * 1024);
    const form = multipart(content);
    const res = await stack.request({
      method: 'POST',
      path: '/v1/files',
      headers: { authorization: `Bearer ${key}`, 'content-type': form.type },
      body: form.body,
    });
    expect(res.status, res.body).toBe(200);
    expect(res.json().bytes).toBe(content.length + 1);
  }, 60_000);

  it('a keyless upload is refused on its headers, while its body is still unsent', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: 'localhost',
          port: stack.ports.gateway,
          ca: stack.ca,
          method: 'POST',
          path: '/v1/files',
          headers: { 'content-type': 'multipart/form-data; boundary=zz', 'content-length': String(100 * 1024 * 1024) },
        },
        (res) => {
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(16 * 1024));
    });
    expect(status).toBe(401);
  });
});

describe('kill -9 of the embedder mid-batch', () => {
  it('the batch completes after a restart: every custom_id once in the output, every line billed once', async () => {
    const key = orgWithKey(stack, 'batch-kill').key;
    const auth = { authorization: `Bearer ${key}` };
    const lines = 3000;
    const line = (i: number) =>
      JSON.stringify({
        custom_id: `k${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: stack.svc.modelId, input: `Note ${i}: troponin normal.` },
      });
    const form = multipart(Buffer.from(Array.from({ length: lines }, (_, i) => line(i)).join('\n')));
    const file = (
      await stack.request({ method: 'POST', path: '/v1/files', headers: { ...auth, 'content-type': form.type }, body: form.body })
    ).json();
    const create = await stack.request({
      method: 'POST',
      path: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }),
    });
    const id = create.json().id as string;
    // Polled as an SDK polls: a 503 (a Check timed out on a loaded machine, the embedder restarting) is asked again.
    const get = async (): Promise<any> => {
      for (;;) {
        const res = await stack.request({ method: 'GET', path: `/v1/batches/${id}`, headers: auth });
        if (res.status === 200) return res.json();
        expect(res.status, res.body).toBe(503);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    while ((await get()).request_counts.completed < 200) await new Promise((r) => setTimeout(r, 100));
    process.kill(stack.processes.embedder.pid!, 'SIGKILL');
    await stack.startService('embedder', { BATCH_POLL_MS: '50', BATCH_LEASE_MS: '3000' });
    let batch = await get();
    while (batch.status !== 'completed') {
      await new Promise((r) => setTimeout(r, 250));
      batch = await get();
    }
    expect(batch.request_counts).toEqual({ total: lines, completed: lines, failed: 0 });
    const output = (await stack.request({ method: 'GET', path: `/v1/files/${batch.output_file_id}/content`, headers: auth })).body;
    const ids = output
      .trim()
      .split('\n')
      .map((l: string) => JSON.parse(l).custom_id as string);
    expect(ids).toHaveLength(lines);
    expect(new Set(ids).size).toBe(lines);
    const usage = batchUsage(id);
    expect(usage).toHaveLength(lines);
    expect(new Set(usage).size).toBe(lines);
  }, 300_000);
});

describe('a canary sentence through every Batch API path', () => {
  it('never reaches a log (Envoy, authz, embedder), the store, Redis or an error body', async () => {
    const canary = `CANARY-${randomBytes(6).toString('hex')}`;
    const key = orgWithKey(stack, 'batch-canary').key;
    const auth = { authorization: `Bearer ${key}` };
    const line = (id: string, body: Record<string, unknown>) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: stack.svc.modelId, ...body } });
    const good = multipart(
      Buffer.from(
        [line(`${canary}-a`, { input: `${canary} chest pain` }), line(`${canary}-b`, { input: canary, dimensions: 3 })].join('\n'),
      ),
    );
    const bodies: string[] = [];
    const upload = await stack.request({
      method: 'POST',
      path: `/v1/files?${canary}=1`,
      headers: { ...auth, 'content-type': good.type, 'x-canary': canary },
      body: good.body,
    });
    expect(upload.status, upload.body).toBe(200);
    const bad = multipart(Buffer.from(`${line('x', { input: canary })}\n{"custom_id": "${canary}", broken`));
    bodies.push(
      (await stack.request({ method: 'POST', path: '/v1/files', headers: { ...auth, 'content-type': bad.type }, body: bad.body })).body,
    );
    const created = await stack.request({
      method: 'POST',
      path: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        input_file_id: upload.json().id,
        endpoint: '/v1/embeddings',
        completion_window: '24h',
        metadata: { note: canary },
      }),
    });
    const id = created.json().id as string;
    let batch = created.json();
    while (batch.status !== 'completed') {
      await new Promise((r) => setTimeout(r, 200));
      batch = (await stack.request({ method: 'GET', path: `/v1/batches/${id}`, headers: auth })).json();
    }
    bodies.push(
      (await stack.request({ method: 'GET', path: `/v1/files/file-${canary.slice(7, 19)}${'0'.repeat(12)}`, headers: auth })).body,
    );
    bodies.push((await stack.request({ method: 'GET', path: `/v1/batches/${canary}`, headers: auth })).body);
    for (const body of bodies) expect(body).not.toContain(canary);
    // The results do carry it back to its owner (custom_id and vectors), and only there.
    expect((await stack.request({ method: 'GET', path: `/v1/files/${batch.output_file_id}/content`, headers: auth })).body).toContain(
      `${canary}-a`,
    );
    await new Promise((r) => setTimeout(r, 1500)); // Envoy flushes its access log every second
    const files: string[] = [];
    const walk = (at: string) => {
      for (const name of readdirSync(at)) {
        const path = join(at, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(stack.dirs.logDir);
    walk(stack.dirs.batchStoreDir);
    for (const path of files) expect(readFileSync(path).includes(Buffer.from(canary)), path).toBe(false);
    const dump = execFileSync(
      'bash',
      [
        '-c',
        `redis-cli -u ${redisUrl} --scan --pattern '${stack.svc.redisKeyPrefix}*' | while read k; do redis-cli -u ${redisUrl} DUMP "$k"; done`,
      ],
      {
        encoding: 'latin1',
        maxBuffer: 256 * 1024 * 1024,
      },
    );
    expect(dump).not.toContain(canary);
  }, 120_000);
});
