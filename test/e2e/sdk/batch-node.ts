/**
 * The OpenAI Node SDK's Batch API calls against the gateway, as a user runs them: upload, create,
 * poll, download, list, cancel, delete. Prints one JSON report (counts and ids, never vectors).
 * Env: GATEWAY_BASE_URL, KEY, MODEL, LINES; the CA through NODE_EXTRA_CA_CERTS.
 */
import OpenAI, { toFile } from 'openai';

const client = new OpenAI({ baseURL: `${process.env.GATEWAY_BASE_URL}/v1`, apiKey: process.env.KEY! });
const model = process.env.MODEL!;
const lines = Number(process.env.LINES ?? 50);
const request = (i: number) =>
  JSON.stringify({
    custom_id: `note-${i}`,
    method: 'POST',
    url: '/v1/embeddings',
    body: { model, input: `Patient ${i} denies chest pain.` },
  });

async function poll(id: string, until: readonly string[]) {
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (until.includes(batch.status)) return batch;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const upload = await client.files.create({
  file: await toFile(Buffer.from(Array.from({ length: lines }, (_, i) => request(i)).join('\n')), 'notes.jsonl'),
  purpose: 'batch',
});
const created = await client.batches.create({ input_file_id: upload.id, endpoint: '/v1/embeddings', completion_window: '24h' });
const done = await poll(created.id, ['completed', 'failed', 'expired', 'cancelled']);
const output = await (await client.files.content(done.output_file_id!)).text();
const rows = output
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const listed = await client.batches.list({ limit: 5 });
const files = await client.files.list();

const big = await client.files.create({
  file: await toFile(Buffer.from(Array.from({ length: 40 * lines }, (_, i) => request(i)).join('\n')), 'more.jsonl'),
  purpose: 'batch',
});
const second = await client.batches.create({ input_file_id: big.id, endpoint: '/v1/embeddings', completion_window: '24h' });
const cancelling = await client.batches.cancel(second.id);
const cancelled = await poll(second.id, ['cancelled']);
const deleted = await client.files.delete(upload.id);
let afterDelete = 0;
await client.files.retrieve(upload.id).catch((error: { status?: number }) => (afterDelete = error.status ?? -1));

console.log(
  JSON.stringify({
    uploaded: { id: upload.id, purpose: upload.purpose, filename: upload.filename, bytes: upload.bytes },
    created: created.status,
    done: { status: done.status, counts: done.request_counts },
    customIds: rows.map((r) => r.custom_id),
    dims: rows.map((r) => r.response.body.data[0].embedding.length),
    listedIds: listed.data.map((b) => b.id),
    fileIds: files.data.map((f) => f.id),
    cancelling: cancelling.status,
    cancelled: { status: cancelled.status, counts: cancelled.request_counts },
    deleted: deleted.deleted,
    afterDelete,
    batchId: created.id,
    secondId: second.id,
  }),
);
