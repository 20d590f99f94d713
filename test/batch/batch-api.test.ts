/**
 * The Batch API end to end inside one embedder (the generated test model, the real Redis with
 * its functions loaded by a real authz, a directory store): upload, create, run on the batch
 * lane, poll, download, cancel, delete; each organization sees only its own; a bad line fails
 * alone with the online problem; every line is billed once, as batch work; a canary sentence
 * never reaches the logs, metrics, store or Redis.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  captureLogs,
  ensureTestModel,
  scrapeMetrics,
  startTestEmbedder,
  testGrant,
  TEST_MODEL_ID,
  type TestEmbedder,
} from '../support/embedder-app.js';
import { TEST_REDIS_URL } from '../support/redis-store.js';
import { testSettlementKeys } from '../support/settlement.js';
import { addOrg } from '../authz/fixtures.js';
import { BudgetStore } from '../../admin/src/store/budgets.js';

const CANARY = `CANARY-${randomBytes(6).toString('hex')}-patient-note`;
const dir = mkdtempSync(join(tmpdir(), 'ctg-batch-api-'));
const logs = captureLogs();
let embedder: TestEmbedder;

beforeAll(async () => {
  embedder = await startTestEmbedder(ensureTestModel(), {
    logStream: logs.stream,
    env: {
      BATCH_KEK: randomBytes(32).toString('hex'),
      BATCH_STORE: `dir:${join(dir, 'store')}`,
      BATCH_POLL_MS: '20',
      BATCH_LEASE_MS: '2000',
      BATCH_WORKERS: '2',
    },
  });
  await addOrg(embedder.authz.store, 'other-org');
  await addOrg(embedder.authz.store, 'revoked-org', { models: [] });
  await addOrg(embedder.authz.store, 'budget-org');
  await new BudgetStore(embedder.authz.store.connection).set('budget-org', { monthlyTokens: 5, hardStop: true, alertPercents: [] });
}, 120_000);

afterAll(async () => {
  await embedder?.close();
  rmSync(dir, { recursive: true, force: true });
});

const line = (id: string, body: Record<string, unknown>) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: TEST_MODEL_ID, ...body } });

function multipart(content: string, purpose = 'batch', filename = 'notes.jsonl', extra: string[] = []): { body: Buffer; type: string } {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const body = Buffer.from(
    extra.map((name, i) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${i}\r\n`).join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/jsonl\r\n\r\n` +
      `${content}\r\n--${boundary}--\r\n`,
  );
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

const call = (
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  options: { org?: string; json?: unknown; raw?: { body: Buffer; type: string } } = {},
) =>
  embedder.app.inject({
    method,
    url,
    headers: {
      ...testGrant(options.org ? { org: options.org } : {}),
      ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.raw ? { 'content-type': options.raw.type } : {}),
    },
    ...(options.json !== undefined ? { payload: JSON.stringify(options.json) } : {}),
    ...(options.raw ? { payload: options.raw.body } : {}),
  });

async function upload(content: string, org?: string) {
  const res = await call('POST', '/v1/files', { raw: multipart(content), ...(org ? { org } : {}) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; bytes: number; filename: string; purpose: string };
}

async function createBatch(fileId: string, org?: string) {
  const res = await call('POST', '/v1/batches', {
    json: { input_file_id: fileId, endpoint: '/v1/embeddings', completion_window: '24h' },
    ...(org ? { org } : {}),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; status: string };
}

async function waitFor(id: string, done: (batch: any) => boolean, ms = 60_000, org?: string): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const batch = (await call('GET', `/v1/batches/${id}`, org ? { org } : {})).json();
    if (done(batch)) return batch;
    if (Date.now() > until) throw new Error(`batch ${id} still ${batch.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const jsonl = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('the Batch API', () => {
  it('runs a file to completion: one output line per good line, bad lines in the error file with the online codes', async () => {
    const good = Array.from({ length: 70 }, (_, i) =>
      line(`ok-${i}`, { input: [`${CANARY} sentence ${i}`, 'second'], input_type: i % 2 ? 'query' : 'document' }),
    );
    const bad = [
      line('dims', { input: CANARY, dimensions: 256 }),
      line('model', { input: CANARY, model: 'another-model' }),
      line('long', { input: `${CANARY} `.repeat(400) }),
      line('empty', { input: [] }),
    ];
    const file = await upload([...good.slice(0, 35), ...bad, ...good.slice(35)].join('\n'));
    expect(file).toMatchObject({ purpose: 'batch', filename: 'notes.jsonl' });
    const created = await createBatch(file.id);
    expect(created.status).toBe('in_progress');
    const batch = await waitFor(created.id, (b) => b.status === 'completed');
    expect(batch.request_counts).toEqual({ total: 74, completed: 70, failed: 4 });

    const output = jsonl((await call('GET', `/v1/files/${batch.output_file_id}/content`)).body);
    expect(output.map((o) => o.custom_id).sort()).toEqual(Array.from({ length: 70 }, (_, i) => `ok-${i}`).sort());
    for (const o of output) {
      expect(o.response.status_code).toBe(200);
      expect(o.response.body.data).toHaveLength(2);
      expect(o.response.body.data[0].embedding).toHaveLength(1024);
      expect(o.id).toMatch(/^batch_req_[0-9a-f]{32}$/);
    }
    const errors = Object.fromEntries(
      jsonl((await call('GET', `/v1/files/${batch.error_file_id}/content`)).body).map((e) => [e.custom_id, e]),
    );
    expect(errors.dims.response.body.code).toBe('invalid_request');
    expect(errors.model.response.body.code).toBe('model_not_enabled');
    expect(errors.model.response.status_code).toBe(403);
    expect(errors.long.response.body.detail).toMatch(/maximum context length/);
    expect(errors.empty.response.body).toMatchObject({ code: 'invalid_body', detail: 'input: must contain at least 1 item' });

    // Billed once per embedded line, as batch work, with the batch's key and model.
    const usage = execFileSync(
      'redis-cli',
      [
        '-u',
        TEST_REDIS_URL,
        'XRANGE',
        (await testSettlementKeys(embedder.authz.store.connection.keys.prefix)).usageStream('test-org'),
        '-',
        '+',
      ],
      {
        encoding: 'utf8',
      },
    );
    const batchRecords = usage.split('\n').filter((l) => l.trim() === created.id).length;
    expect(batchRecords).toBe(70);
  }, 120_000);

  it("checks each line against the organization's records as it runs: model access, and a hard-stop budget", async () => {
    for (const [org, code, status] of [
      ['revoked-org', 'model_not_enabled', 403],
      ['budget-org', 'rate_limit_exceeded', 429],
    ] as const) {
      // The grant (authz's decision at create time) names the model; the organization's records now say no.
      const file = await upload([line('a', { input: CANARY }), line('b', { input: `${CANARY} again` })].join('\n'), org);
      const batch = await waitFor((await createBatch(file.id, org)).id, (b) => b.status === 'completed', 60_000, org);
      expect(batch.request_counts).toEqual({ total: 2, completed: 0, failed: 2 });
      const errors = jsonl((await call('GET', `/v1/files/${batch.error_file_id}/content`, { org })).body);
      expect(errors.map((e) => [e.response.status_code, e.response.body.code])).toEqual([
        [status, code],
        [status, code],
      ]);
    }
  }, 60_000);

  it('the same vectors as the online endpoint for the same input', async () => {
    const file = await upload(line('one', { input: 'Troponin normal.', encoding_format: 'float' }));
    const batch = await waitFor((await createBatch(file.id)).id, (b) => b.status === 'completed');
    const [out] = jsonl((await call('GET', `/v1/files/${batch.output_file_id}/content`)).body);
    const online = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { ...testGrant(), 'content-type': 'application/json' },
      payload: JSON.stringify({ model: TEST_MODEL_ID, input: 'Troponin normal.' }),
    });
    const a = out.response.body.data[0].embedding as number[];
    const b = online.json().data[0].embedding as number[];
    expect(a.every((x, i) => Math.abs(x - b[i]!) < 1e-6)).toBe(true);
  }, 60_000);

  it('scopes files and batches to their organization: another organization gets 404', async () => {
    const file = await upload(line('x', { input: 'a' }));
    const batch = await createBatch(file.id);
    for (const url of [`/v1/files/${file.id}`, `/v1/files/${file.id}/content`, `/v1/batches/${batch.id}`]) {
      expect((await call('GET', url, { org: 'other-org' })).statusCode).toBe(404);
    }
    expect((await call('POST', `/v1/batches/${batch.id}/cancel`, { org: 'other-org' })).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/files/${file.id}`, { org: 'other-org' })).statusCode).toBe(404);
    const listed = (await call('GET', '/v1/files', { org: 'other-org' })).json();
    expect(listed.data.map((f: { id: string }) => f.id)).not.toContain(file.id);
    const create = await call('POST', '/v1/batches', {
      org: 'other-org',
      json: { input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' },
    });
    expect(create.statusCode).toBe(404);
    await waitFor(batch.id, (b) => b.status === 'completed');
  }, 60_000);

  it('refuses a malformed upload, a wrong purpose, and a bad create with problems, never a 500', async () => {
    const malformed = await call('POST', '/v1/files', { raw: multipart(`${line('a', { input: 'x' })}\n{"custom_id": "${CANARY}"`) });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toMatchObject({ code: 'invalid_body', detail: expect.stringMatching(/^file: line 2: /) });
    const purpose = await call('POST', '/v1/files', { raw: multipart(line('a', { input: 'x' }), 'fine-tune') });
    expect(purpose.json()).toMatchObject({ code: 'invalid_body', detail: 'purpose: must be batch' });
    // Other fields are ignored, as many as the bound, whatever their names (schemathesis sent
    // an empty name and control characters); past it the form is refused by name, never read
    // in part (the file part after busboy's limit used to vanish: "file: is required").
    const fields = (n: number) =>
      Array.from({ length: n }, (_, i) => (i % 3 === 0 ? '' : i % 3 === 1 ? `x\u000f;${i}` : `expires_after[${i}]`));
    const extra = await call('POST', '/v1/files', { raw: multipart(line('a', { input: 'x' }), 'batch', 'a.jsonl', fields(31)) });
    expect(extra.statusCode, extra.body).toBe(200);
    const over = await call('POST', '/v1/files', { raw: multipart(line('a', { input: 'x' }), 'batch', 'a.jsonl', fields(40)) });
    expect(over.statusCode).toBe(400);
    expect(over.json()).toMatchObject({ code: 'invalid_body', detail: 'body: at most 32 form fields besides one part named file' });
    const garbage = await call('POST', '/v1/files', {
      raw: { body: Buffer.from('not multipart at all'), type: 'multipart/form-data; boundary=zz' },
    });
    expect(garbage.statusCode).toBe(400);
    const noGrant = await embedder.app.inject({ method: 'GET', url: '/v1/files' });
    expect(noGrant.statusCode).toBe(401);
    const endpoint = await call('POST', '/v1/batches', {
      json: { input_file_id: `file-${'0'.repeat(24)}`, endpoint: '/v1/chat/completions', completion_window: '24h' },
    });
    expect(endpoint.json()).toMatchObject({ code: 'invalid_body', detail: 'endpoint: must be one of /v1/embeddings' });
    const missing = await call('POST', '/v1/batches', {
      json: { input_file_id: `file-${'0'.repeat(24)}`, endpoint: '/v1/embeddings', completion_window: '24h' },
    });
    expect(missing.json()).toMatchObject({ code: 'not_found' });
    expect((await call('GET', '/v1/batches?after=batch_unknown')).json()).toMatchObject({ data: [], has_more: false });
    expect((await call('GET', '/v1/files?purpose=fine-tune')).json()).toMatchObject({
      code: 'invalid_body',
      detail: 'purpose: must be one of batch, batch_output',
    });
    expect((await call('GET', '/v1/batches/batch_nope')).statusCode).toBe(404);
  });

  it('cancels: the batch ends cancelled and bills only the lines it completed', async () => {
    const lines = Array.from({ length: 640 }, (_, i) => line(`c-${i}`, { input: `${CANARY} ${i}` }));
    const file = await upload(lines.join('\n'));
    const created = await createBatch(file.id);
    const cancel = await call('POST', `/v1/batches/${created.id}/cancel`);
    expect(['cancelling', 'cancelled']).toContain(cancel.json().status);
    const batch = await waitFor(created.id, (b) => b.status === 'cancelled');
    expect(batch.request_counts.completed).toBeLessThan(640);
    const output = batch.output_file_id ? jsonl((await call('GET', `/v1/files/${batch.output_file_id}/content`)).body) : [];
    expect(output).toHaveLength(batch.request_counts.completed);
  }, 60_000);

  it('deletes a file and its sealed content at once', async () => {
    const file = await upload(line('d', { input: CANARY }));
    const del = await call('DELETE', `/v1/files/${file.id}`);
    expect(del.json()).toEqual({ id: file.id, object: 'file', deleted: true });
    expect((await call('GET', `/v1/files/${file.id}`)).statusCode).toBe(404);
    expect(readdirSync(join(dir, 'store', 'parts'))).not.toContain(`in-${file.id}`);
  });

  it('leaves no trace of the canary in the store, Redis, logs or metrics', async () => {
    const files: string[] = [];
    const walk = (at: string) => {
      for (const name of readdirSync(at)) {
        const path = join(at, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(join(dir, 'store'));
    expect(files.length).toBeGreaterThan(0);
    for (const path of files) expect(readFileSync(path).includes(Buffer.from('CANARY-'))).toBe(false);
    const prefix = embedder.authz.store.connection.keys.prefix;
    const dump = execFileSync(
      'bash',
      [
        '-c',
        `redis-cli -u ${TEST_REDIS_URL} --scan --pattern '${prefix}*' | while read k; do redis-cli -u ${TEST_REDIS_URL} DUMP "$k"; done`,
      ],
      {
        encoding: 'latin1',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    expect(dump).not.toContain('CANARY-');
    expect(logs.text()).not.toContain('CANARY-');
    expect(await scrapeMetrics(embedder.app)).not.toContain('CANARY-');
  });
});
