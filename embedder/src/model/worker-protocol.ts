/** Messages between the main thread (model/runner.ts) and the model worker (model/worker.ts). */
import type { Pooling } from '../../../contract/model-manifest.js';

/** Everything the worker needs to open and run the model, passed as `workerData`. */
export interface WorkerSetup {
  readonly modelPath: string;
  readonly threads: number;
  readonly outputName: string;
  readonly pooling: Pooling;
  readonly nativeDimensions: number;
  readonly outDimensions: number;
  /** This thread's OS nice value, set before the session opens so its intra-op threads inherit it (background-runner.ts). */
  readonly niceness?: number;
}

/** One batch: the rows' token ids concatenated, and each row's length. */
export interface ToWorker {
  readonly kind: 'run';
  readonly id: number;
  readonly ids: Int32Array;
  readonly lengths: Int32Array;
}

export type FromWorker =
  | { readonly kind: 'ready' }
  | { readonly kind: 'load_failed'; readonly message: string }
  | { readonly kind: 'done'; readonly id: number; readonly vectors: Float32Array }
  | { readonly kind: 'failed'; readonly id: number; readonly message: string };
