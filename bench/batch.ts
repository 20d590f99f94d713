/**
 * The Batch API's goals (issue 27), on the default model through the whole gateway:
 * - batch throughput with no online traffic, beside raw ONNX Runtime at its best batch size on
 *   the same texts (bench/raw-ort.ts): the goal is at least 0.9×;
 * - online p99 of one-sentence requests at a fixed open-loop rate, alone and while a batch runs:
 *   the goal is within 1.25×;
 * - fairness between two organizations' batches started together: each one's share of the lines
 *   completed when the first ends (0.5 each is fair).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { resolve } from 'node:path';
import { runScriptJson } from './child-json.ts';
import { clinicalTexts } from './corpus.ts';
import { quantile } from './hey.ts';
import { openLoop } from './open-loop.ts';
import { admin, startBenchStack, type BenchStack, type StackPaths } from './stack.ts';

export interface BatchBenchResult {
  readonly model: string;
  readonly inputsPerLine: number;
  readonly rawOrt: { readonly inputsPerS: number; readonly bestBatch: number };
  readonly batchInputsPerS: number;
  readonly throughputRatio: number;
  /** The same for clinical notes (~230 tokens), lines of 10. */
  readonly notes: { readonly rawOrtInputsPerS: number; readonly batchInputsPerS: number; readonly ratio: number };
  readonly online: { readonly rate: number; readonly p99Alone: number; readonly p99WithBatch: number; readonly p99Ratio: number };
  readonly fairness: { readonly shares: readonly number[] };
}

/** The fields of the API's answers the bench reads (a file, a batch). */
interface Answer {
  readonly id: string;
  readonly status: string;
  readonly request_counts: { readonly completed: number };
}

interface Client {
  call(method: string, path: string, body?: { type: string; data: Buffer }): Promise<Answer>;
}

/** Asks again after a 503 (a Check that timed out on a loaded machine), as an SDK would. */
function client(stack: BenchStack, ca: Buffer, key: string): Client {
  const once = rawClient(stack, ca, key);
  return {
    async call(method, path, body) {
      for (let attempt = 0; ; attempt++) {
        try {
          return await once.call(method, path, body);
        } catch (error) {
          if (attempt >= 5 || !/: 503 /.test((error as Error).message)) throw error;
          await sleep(500);
        }
      }
    },
  };
}

function rawClient(stack: BenchStack, ca: Buffer, key: string): Client {
  const url = new URL(stack.gatewayUrl);
  return {
    call: (method, path, body) =>
      new Promise((done, fail) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path,
            ca,
            headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': body.type } : {}) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              if ((res.statusCode ?? 0) >= 300) fail(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`));
              else done(JSON.parse(text) as Answer);
            });
          },
        );
        req.on('error', fail);
        req.end(body?.data);
      }),
  };
}

/** Uploads `lines` lines of `perLine` clinical texts (short sentences or notes) and creates a batch; returns its id. */
async function startBatch(
  api: Client,
  modelId: string,
  lines: number,
  perLine: number,
  seed: number,
  kind: 'short' | 'note' = 'short',
): Promise<string> {
  const texts = clinicalTexts(kind, lines * perLine, seed);
  const content = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `l${i}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: modelId, input: texts.slice(i * perLine, (i + 1) * perLine) },
    }),
  ).join('\n');
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const data = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n\r\n${content}\r\n--${boundary}--\r\n`,
  );
  const file = await api.call('POST', '/v1/files', { type: `multipart/form-data; boundary=${boundary}`, data });
  const body = Buffer.from(JSON.stringify({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }));
  return (await api.call('POST', '/v1/batches', { type: 'application/json', data: body })).id;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitDone(api: Client, id: string): Promise<void> {
  for (;;) {
    const batch = await api.call('GET', `/v1/batches/${id}`);
    if (['completed', 'failed', 'cancelled', 'expired'].includes(batch.status)) return;
    await sleep(100);
  }
}

/** p99 (ms) of the 200s of an open loop of one-sentence requests. */
async function onlineP99(stack: BenchStack, ca: Buffer, rate: number, seconds: number): Promise<number> {
  const result = await openLoop({
    port: Number(new URL(stack.gatewayUrl).port),
    ca,
    rate,
    seconds,
    sessions: 4,
    body: JSON.stringify({ model: stack.modelId, input: 'Patient denies chest pain.' }),
    headers: () => ({ authorization: `Bearer ${stack.apiKey}` }),
  });
  const ok = result.latencies.filter((l) => l.status === 200).map((l) => l.ms);
  // A loaded machine times Checks out (503): reported beside the figure, not hidden in it.
  if (ok.length < result.sent) process.stderr.write(`bench: online load answers ${JSON.stringify(result.statuses)}\n`);
  if (ok.length < result.sent * 0.5) throw new Error(`online load: ${JSON.stringify(result.statuses)}`);
  return quantile(
    ok.sort((a, b) => a - b),
    0.99,
  );
}

/**
 * Each batch's share of the lines completed by the time the first of them ends. Started together
 * with equal work, fair sharing finishes them together (0.5 each); first come, first served
 * would leave the second near 0.
 */
async function fairness(apis: readonly Client[], ids: readonly string[]): Promise<number[]> {
  const read = () => Promise.all(apis.map((api, i) => api.call('GET', `/v1/batches/${ids[i]}`)));
  let batches = await read();
  while (batches.every((b) => b.status === 'in_progress')) {
    await sleep(100);
    batches = await read();
  }
  const done = batches.map((b) => b.request_counts.completed);
  const total = done.reduce((a, b) => a + b, 0);
  return done.map((n) => (total === 0 ? 0 : Math.round((n / total) * 1000) / 1000));
}

/** Runs the three measurements on `modelDir`. */
export async function measureBatch(modelDir: string, modelId: string, paths: StackPaths, quick: boolean): Promise<BatchBenchResult> {
  const perLine = 100;
  const rawOf = (kind: 'short' | 'note') =>
    runScriptJson<{ inputsPerS: number; bestBatch: number }>(resolve('bench/raw-ort.ts'), [
      '--model-dir',
      modelDir,
      '--kind',
      kind,
      '--seconds',
      quick ? '2' : '4',
    ]);
  const raw = await rawOf('short');
  const rawNotes = await rawOf('note');
  const storeDir = resolve(`.local/bench/batch-${randomBytes(4).toString('hex')}`);
  const stack = await startBenchStack(modelDir, modelId, paths, {
    BATCH_KEK: randomBytes(32).toString('hex'),
    BATCH_STORE: `dir:${storeDir}`,
    BATCH_POLL_MS: '50',
  });
  const ca = readFileSync(`${paths.tlsDir}/ca.pem`);
  try {
    const api = client(stack, ca, stack.apiKey);
    await admin(stack.authzEnv, ['org', 'create', 'bench2', '--models', modelId]);
    const key2 = (await admin(stack.authzEnv, ['key', 'create', '--org', 'bench2', '--name', 'bench2'])).key as string;
    const api2 = client(stack, ca, key2);

    const lines = quick ? 20 : 60;
    const started = performance.now();
    const alone = await startBatch(api, modelId, lines, perLine, 11);
    await waitDone(api, alone);
    const batchInputsPerS = (lines * perLine) / ((performance.now() - started) / 1000);
    const noteLines = quick ? 10 : 30;
    const notesStarted = performance.now();
    await waitDone(api, await startBatch(api, modelId, noteLines, 10, 15, 'note'));
    const notesPerS = (noteLines * 10) / ((performance.now() - notesStarted) / 1000);

    const rate = 20;
    const seconds = quick ? 5 : 15;
    const p99Alone = await onlineP99(stack, ca, rate, seconds);
    const long = await startBatch(api, modelId, Math.ceil((batchInputsPerS * (seconds + 10)) / perLine), perLine, 12);
    await sleep(1000);
    const p99WithBatch = await onlineP99(stack, ca, rate, seconds);
    await api.call('POST', `/v1/batches/${long}/cancel`);
    await waitDone(api, long);

    // Lines of 5 sentences: several segments per batch, so progress is seen as it happens.
    const fairLines = quick ? 200 : 400;
    const pair = await Promise.all([startBatch(api, modelId, fairLines, 5, 13), startBatch(api2, modelId, fairLines, 5, 14)]);
    const shares = await fairness([api, api2], pair);
    return {
      model: modelId,
      inputsPerLine: perLine,
      rawOrt: { inputsPerS: raw.inputsPerS, bestBatch: raw.bestBatch },
      batchInputsPerS,
      throughputRatio: batchInputsPerS / raw.inputsPerS,
      notes: { rawOrtInputsPerS: rawNotes.inputsPerS, batchInputsPerS: notesPerS, ratio: notesPerS / rawNotes.inputsPerS },
      online: { rate, p99Alone, p99WithBatch, p99Ratio: p99WithBatch / p99Alone },
      fairness: { shares },
    };
  } finally {
    await stack.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}
