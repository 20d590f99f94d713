/**
 * The main thread's handle on the model worker: starts it, sends it batches of token ids and
 * gets back pooled unit vectors. Inference and session creation both happen off the event loop.
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { disableOrtTelemetry } from './ort-telemetry.js';
import type { FromWorker, ToWorker, WorkerSetup } from './worker-protocol.js';

/** Embeds token-id rows, one vector per row in row order (the model's one operation; core/ batches the calls). */
export type EmbedRows = (rows: readonly (readonly number[])[]) => Promise<Float32Array[]>;

export interface ModelRunner {
  readonly embedRows: EmbedRows;
  /** Resolves once the session is loaded; rejects if loading fails. */
  readonly loaded: Promise<void>;
  close(): Promise<void>;
}

export interface RunnerOptions {
  readonly modelDir: string;
  readonly threads: number;
  readonly manifest: Pick<WorkerSetup, 'outputName' | 'pooling' | 'nativeDimensions'>;
  readonly outDimensions: number;
  /** The worker thread's nice value (Linux only: see background-runner.ts); unset keeps the process's. */
  readonly niceness?: number;
  /** Called once if the worker dies; pending batches are rejected either way. */
  readonly onFatal?: (err: Error) => void;
}

// Tests (vitest) and `npm run embedder` (tsx) run TypeScript without a build step, but a worker
// starts with a bare loader: tsx's API loads the TypeScript entry inside it. The images run the
// compiled JavaScript (scripts/images/build-service.mjs), whose worker.js node imports itself.
const COMPILED = import.meta.url.endsWith('.js');
const BOOTSTRAP = COMPILED
  ? `import(require('node:worker_threads').workerData.entry);`
  : `
const { workerData } = require('node:worker_threads');
import('tsx/esm/api').then((api) => api.tsImport(workerData.entry, workerData.entry));
`;

/** Starts the model worker for `options.modelDir`. */
export function startModelRunner(options: RunnerOptions): ModelRunner {
  const setup: WorkerSetup & { entry: string } = {
    entry: new URL(COMPILED ? './worker.js' : './worker.ts', import.meta.url).href,
    modelPath: join(options.modelDir, 'model.onnx'),
    threads: options.threads,
    outDimensions: options.outDimensions,
    ...(options.niceness === undefined ? {} : { niceness: options.niceness }),
    ...pickSetup(options.manifest),
  };
  disableOrtTelemetry();
  const worker = new Worker(BOOTSTRAP, { eval: true, workerData: setup });
  const pending = new Map<number, { resolve: (v: Float32Array) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let dead: Error | undefined;
  let closing = false;
  let settleLoad: { resolve: () => void; reject: (e: Error) => void } | undefined;
  const loaded = new Promise<void>((resolve, reject) => (settleLoad = { resolve, reject }));
  loaded.catch(() => undefined); // a load failure is also reported through die()

  const die = (err: Error): void => {
    if (dead) return;
    dead = err;
    settleLoad?.reject(err);
    for (const entry of pending.values()) entry.reject(err);
    pending.clear();
    if (!closing) options.onFatal?.(err);
  };

  worker.on('message', (message: FromWorker) => {
    if (message.kind === 'ready') return settleLoad?.resolve();
    if (message.kind === 'load_failed') return die(new Error(`model failed to load: ${message.message}`));
    const entry = pending.get(message.id);
    pending.delete(message.id);
    if (message.kind === 'done') entry?.resolve(message.vectors);
    else entry?.reject(new Error(`model run failed: ${message.message}`));
  });
  worker.on('error', (err) => die(err));
  worker.on('exit', (code) => die(new Error(`model worker exited (code ${code})`)));

  // Each vector is a view of `outDimensions` floats into the batch's one transferred buffer.
  const embedRows: EmbedRows = async (rows) => {
    if (dead) throw dead;
    const lengths = Int32Array.from(rows, (row) => row.length);
    const ids = new Int32Array(lengths.reduce((a, b) => a + b, 0));
    let offset = 0;
    for (const row of rows) {
      ids.set(row, offset);
      offset += row.length;
    }
    const id = nextId++;
    const flat = await new Promise<Float32Array>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ kind: 'run', id, ids, lengths } satisfies ToWorker, [ids.buffer, lengths.buffer]);
    });
    return rows.map((_, i) => flat.subarray(i * options.outDimensions, (i + 1) * options.outDimensions));
  };

  return {
    embedRows,
    loaded,
    async close() {
      closing = true;
      die(new Error('model runner closed'));
      await worker.terminate();
    },
  };
}

function pickSetup(m: RunnerOptions['manifest']): Pick<WorkerSetup, 'outputName' | 'pooling' | 'nativeDimensions'> {
  return { outputName: m.outputName, pooling: m.pooling, nativeDimensions: m.nativeDimensions };
}
