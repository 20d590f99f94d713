/**
 * The Batch API's goals (issue 27), on the default model through the whole gateway:
 * - batch throughput with no online traffic, beside raw ONNX Runtime at its best batch size on
 *   the same texts (bench/raw-ort.ts): the goal is at least 0.9×;
 * - online p99 of one-sentence requests at a fixed open-loop rate, alone and while a batch runs
 *   (idle windows and batches alternating under one open loop): the goal is within 1.25×;
 * - both for each BATCH_SESSION (`shared`: the online model session between online calls;
 *   `background`, the default: a session of its own at nice 19), one stack each, in one run;
 * - fairness between two organizations' batches started together: each one's share of the lines
 *   completed when the first ends (0.5 each is fair).
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import { request } from 'node:https';
import { resolve } from 'node:path';
import { runScriptJson } from './child-json.ts';
import { clinicalTexts } from './corpus.ts';
import { quantile, tailMean } from './hey.ts';
import { openLoop, type LoopAnswer } from './open-loop.ts';
import { residentMemory } from './processes.ts';
import { admin, startBenchStack, type BenchStack, type StackPaths } from './stack.ts';

/** The figures of one stack, run with one BATCH_SESSION. */
export interface SessionFigures {
  readonly batchInputsPerS: number;
  readonly notesPerS: number;
  /** p99 (ms) of the online requests' 200s, pooled over the rounds alone and the rounds during a batch. */
  readonly p99Alone: number;
  readonly p99WithBatch: number;
  readonly p99Ratio: number;
  /** The same ratio of the slowest 5 %'s means (steadier than p99; see tailMean). */
  readonly tailRatio: number;
  /** The 200s behind each p99, and the idle/batch cycles they were taken in. */
  readonly samples: { readonly alone: number; readonly during: number; readonly cycles: number };
  /**
   * The embedder's peak resident memory (VmHWM, MB) after the batches of sentences and notes and
   * the online requests beside a batch: every model session loaded and used.
   */
  readonly embedderPeakRssMb: number;
}

export interface BatchBenchResult {
  readonly model: string;
  readonly inputsPerLine: number;
  readonly rawOrt: { readonly inputsPerS: number; readonly bestBatch: number };
  /** Raw ONNX Runtime at nice 19, as the background lane runs: the ceiling the load leaves it. */
  readonly rawOrtNice19: { readonly inputsPerS: number; readonly bestBatch: number };
  readonly batchInputsPerS: number;
  readonly throughputRatio: number;
  /** The same for clinical notes (~230 tokens), lines of 10. */
  readonly notes: { readonly rawOrtInputsPerS: number; readonly batchInputsPerS: number; readonly ratio: number };
  readonly online: {
    readonly rate: number;
    readonly p99Alone: number;
    readonly p99WithBatch: number;
    readonly p99Ratio: number;
    readonly tailRatio: number;
  };
  readonly fairness: { readonly shares: readonly number[] };
  /** The embedder's peak resident memory with the default BATCH_SESSION (SessionFigures). */
  readonly embedderPeakRssMb: number;
  /** Every BATCH_SESSION measured in this run (the top-level figures are `background`'s, the default). */
  readonly sessions: Readonly<Record<string, SessionFigures>>;
  /** 1-minute load average at the start and the end (2 shared cores: busy past 2). */
  readonly loadAverage: readonly [number, number];
}

/** The fields of the API's answers the bench reads (a file, a batch). */
interface Answer {
  readonly id: string;
  readonly status: string;
  readonly request_counts: { readonly completed: number };
}

export interface Client {
  call(method: string, path: string, body?: { type: string; data: Buffer }): Promise<Answer>;
}

/** Asks again after a 503 (a Check that timed out on a loaded machine), as an SDK would. */
export function client(stack: BenchStack, ca: Buffer, key: string): Client {
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
export async function startBatch(
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

/** How long each idle window and each batch lasts in `interleaved`. */
const WINDOW_S = 4;
/** How often `interleaved` asks for the batch's status (in idle windows too). */
const POLL_MS = 200;

/**
 * Online latencies while a batch runs and while none does, from one open loop of one-sentence
 * requests: idle windows and batches alternate every few seconds, so the machine's load (shared,
 * and changing by the minute) falls on both sides alike. A request counts by when it was sent:
 * in an idle window (from 0.5 s after a batch ended; as long as that batch took), or during a batch (from 1 s after its
 * creation, once its first lines run, until it is seen done). Both sides poll a batch's status
 * every POLL_MS (idle windows the finished one's), so the comparison is of the batch's running
 * work, not of the client's polling. Latencies sorted, 200s only.
 */
export async function interleaved(
  stack: BenchStack,
  ca: Buffer,
  api: Client,
  modelId: string,
  inputsPerS: number,
  seconds: number,
): Promise<{ alone: number[]; during: number[]; cycles: number; parts: { alone: string; during: string } }> {
  const alone: Array<[number, number]> = [];
  const during: Array<[number, number]> = [];
  const started = performance.now();
  const loop = openLoop({
    port: Number(new URL(stack.gatewayUrl).port),
    ca,
    rate: ONLINE_RATE,
    seconds,
    sessions: 4,
    body: JSON.stringify({ model: stack.modelId, input: 'Patient denies chest pain.' }),
    headers: () => ({ authorization: `Bearer ${stack.apiKey}` }),
  });
  const end = started + seconds * 1000;
  // Lines of 10: a batch sized to about one window at the lane's pace with no online traffic.
  const lines = Math.max(2, Math.ceil((inputsPerS * WINDOW_S) / 10));
  // An idle window lasts as long as the batch before it, so both sides get about as many requests.
  let idleMs = WINDOW_S * 1000;
  // The batch before (the list, before the first): an idle window polls as a batch's does, so the
  // client's own polling, a full gateway request every POLL_MS, falls on both sides alike.
  let polled = '/v1/batches?limit=1';
  for (let seed = 100; performance.now() < end - 2 * idleMs; seed++) {
    const idle = performance.now();
    while (performance.now() < idle + idleMs) {
      await api.call('GET', polled);
      await sleep(Math.min(POLL_MS, idle + idleMs - performance.now()));
    }
    alone.push([idle + 500, performance.now()]);
    const created = performance.now();
    const id = await startBatch(api, modelId, lines, 10, seed);
    polled = `/v1/batches/${id}`;
    for (;;) {
      const batch = await api.call('GET', polled);
      if (['completed', 'failed', 'cancelled', 'expired'].includes(batch.status)) break;
      if (performance.now() > created + 4 * WINDOW_S * 1000 && batch.status === 'in_progress') {
        await api.call('POST', `/v1/batches/${id}/cancel`);
      }
      await sleep(POLL_MS);
    }
    during.push([created + 1000, performance.now()]);
    idleMs = Math.max(WINDOW_S * 1000, performance.now() - created);
  }
  const result = await loop;
  const inside = (windows: Array<[number, number]>, t: number) => windows.some(([from, to]) => t >= from && t < to);
  const sentAt = (i: number) => started + ((i + 1) / ONLINE_RATE) * 1000;
  const served = (windows: Array<[number, number]>) => result.latencies.filter((l, i) => inside(windows, sentAt(i)) && l.status === 200);
  const pick = (windows: Array<[number, number]>) =>
    served(windows)
      .map((l) => l.ms)
      .sort((a, b) => a - b);
  const ok = result.latencies.filter((l) => l.status === 200).length;
  // A loaded machine times Checks out (503): reported beside the figure, not hidden in it.
  if (ok < result.sent) process.stderr.write(`bench: online load answers ${JSON.stringify(result.statuses)}\n`);
  if (ok < result.sent * 0.5) throw new Error(`online load: ${JSON.stringify(result.statuses)}`);
  return {
    alone: pick(alone),
    during: pick(during),
    cycles: during.length,
    parts: { alone: whereTimeWent(served(alone)), during: whereTimeWent(served(during)) },
  };
}

/**
 * p50 / p99 of each part of the answers' latencies (ServedTiming): the edge (client, TLS, Envoy,
 * authz: latency less Envoy's upstream time), the embedder outside the model, the model.
 */
function whereTimeWent(answers: readonly LoopAnswer[]): string {
  const timed = answers.flatMap((a) => (a.timing ? [{ ms: a.ms, ...a.timing }] : []));
  const part = (name: string, of: (t: (typeof timed)[number]) => number) => {
    const sorted = timed.map(of).sort((a, b) => a - b);
    return `${name} ${quantile(sorted, 0.5).toFixed(1)} / ${quantile(sorted, 0.99).toFixed(1)}`;
  };
  return [
    part('edge', (t) => t.ms - t.upstreamMs),
    part('embedder', (t) => t.upstreamMs - t.queueMs - t.inferenceMs),
    part('model', (t) => t.inferenceMs),
  ].join(', ');
}

const p99 = (sorted: number[]): number => quantile(sorted, 0.99);

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

/** `bench/raw-ort.ts` at nice 19 (its session's threads inherit the main thread's nice value). */
async function rawOrtNice19(args: string[]): Promise<{ inputsPerS: number; bestBatch: number }> {
  const { stdout } = await promisify(execFile)(
    'nice',
    ['-n', '19', process.execPath, '--import', 'tsx', resolve('bench/raw-ort.ts'), ...args],
    {
      timeout: 300_000,
      maxBuffer: 64 * 1024 * 1024,
      killSignal: 'SIGKILL',
    },
  );
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] as string) as { inputsPerS: number; bestBatch: number };
}

/** The batch lane's session modes, the default last (its stack also measures fairness). */
const SESSIONS = ['shared', 'background'] as const;

/**
 * Runs the measurements on `modelDir`: raw ONNX Runtime, then one stack per BATCH_SESSION
 * (throughput, online p99 alone and during a batch in alternating rounds), fairness on the last.
 */
export async function measureBatch(modelDir: string, modelId: string, paths: StackPaths, quick: boolean): Promise<BatchBenchResult> {
  const load0 = loadavg()[0]!;
  // Notes run best in small batches (BENCHMARKS.md round 2); 64 notes a call take GBs and minutes on a loaded machine.
  const rawArgs = (kind: 'short' | 'note') => [
    ...['--model-dir', modelDir, '--kind', kind, '--seconds', quick ? '2' : '4'],
    ...(kind === 'note' ? ['--batches', '4,8,16'] : []),
  ];
  // On a loaded machine a baseline can pass its time limit: its figure is then NaN, and the stacks still run.
  const failed = (error: unknown) => {
    process.stderr.write(`bench: raw ONNX Runtime baseline failed: ${(error as Error).message.split('\n')[0]}\n`);
    return { inputsPerS: Number.NaN, bestBatch: 0 };
  };
  const rawOf = (kind: 'short' | 'note') =>
    runScriptJson<{ inputsPerS: number; bestBatch: number }>(resolve('bench/raw-ort.ts'), rawArgs(kind), 600_000).catch(failed);
  const raw = await rawOf('short');
  const rawNotes = await rawOf('note');
  const rawLow = await rawOrtNice19(rawArgs('short')).catch(failed);
  const sessions: Record<string, SessionFigures> = {};
  let shares: number[] = [];
  for (const session of SESSIONS) {
    const measured = await measureStack(modelDir, modelId, paths, quick, session, session === 'background');
    sessions[session] = measured.figures;
    if (measured.shares) shares = measured.shares;
    process.stderr.write(`bench: batch session ${session} ${JSON.stringify(measured.figures)} load ${loadavg()[0]!.toFixed(1)}\n`);
  }
  const main = sessions.background!;
  return {
    model: modelId,
    inputsPerLine: PER_LINE,
    rawOrt: { inputsPerS: raw.inputsPerS, bestBatch: raw.bestBatch },
    rawOrtNice19: { inputsPerS: rawLow.inputsPerS, bestBatch: rawLow.bestBatch },
    batchInputsPerS: main.batchInputsPerS,
    throughputRatio: main.batchInputsPerS / raw.inputsPerS,
    notes: { rawOrtInputsPerS: rawNotes.inputsPerS, batchInputsPerS: main.notesPerS, ratio: main.notesPerS / rawNotes.inputsPerS },
    online: {
      rate: ONLINE_RATE,
      p99Alone: main.p99Alone,
      p99WithBatch: main.p99WithBatch,
      p99Ratio: main.p99Ratio,
      tailRatio: main.tailRatio,
    },
    fairness: { shares },
    embedderPeakRssMb: main.embedderPeakRssMb,
    sessions,
    loadAverage: [load0, loadavg()[0]!],
  };
}

const PER_LINE = 100;
const ONLINE_RATE = 20;

async function measureStack(
  modelDir: string,
  modelId: string,
  paths: StackPaths,
  quick: boolean,
  session: (typeof SESSIONS)[number],
  withFairness: boolean,
): Promise<{ figures: SessionFigures; shares?: number[] }> {
  const perLine = PER_LINE;
  const storeDir = resolve(`.local/bench/batch-${randomBytes(4).toString('hex')}`);
  const stack = await startBenchStack(modelDir, modelId, paths, {
    BATCH_KEK: randomBytes(32).toString('hex'),
    BATCH_STORE: `dir:${storeDir}`,
    BATCH_POLL_MS: '50',
    BATCH_SESSION: session,
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

    const online = await interleaved(stack, ca, api, modelId, batchInputsPerS, quick ? 90 : 180);
    const p99Alone = p99(online.alone);
    const p99WithBatch = p99(online.during);
    const figures = {
      batchInputsPerS,
      notesPerS,
      p99Alone,
      p99WithBatch,
      p99Ratio: p99WithBatch / p99Alone,
      tailRatio: tailMean(online.during) / tailMean(online.alone),
      samples: { alone: online.alone.length, during: online.during.length, cycles: online.cycles },
      embedderPeakRssMb: residentMemory(stack.services.embedder.pid).hwmMb,
    };
    if (!withFairness) return { figures };

    // Lines of 5 sentences: several segments per batch, so progress is seen as it happens.
    const fairLines = quick ? 200 : 400;
    const pair = await Promise.all([startBatch(api, modelId, fairLines, 5, 13), startBatch(api2, modelId, fairLines, 5, 14)]);
    return { figures, shares: await fairness([api, api2], pair) };
  } finally {
    await stack.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}
