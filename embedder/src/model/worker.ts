/**
 * Entry of the model worker thread: owns the ONNX session, pads each batch, runs it and pools
 * the output, so the main thread's event loop never waits on inference (see session.ts).
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { poolBatch } from './pooling.js';
import { openSession, padBatch, type ModelSession } from './session.js';
import type { FromWorker, ToWorker, WorkerSetup } from './worker-protocol.js';

const setup = workerData as WorkerSetup;
const port = parentPort;
if (!port) throw new Error('model/worker.ts must run in a worker thread');

async function serve(session: ModelSession, message: ToWorker): Promise<void> {
  try {
    const state = await session.run(padBatch(message.ids, message.lengths));
    if (state.hidden !== setup.nativeDimensions) {
      throw new Error(`model width ${state.hidden} differs from the manifest's nativeDimensions ${setup.nativeDimensions}`);
    }
    const vectors = poolBatch(state, Array.from(message.lengths), setup.pooling, setup.outDimensions);
    port!.postMessage({ kind: 'done', id: message.id, vectors } satisfies FromWorker, [vectors.buffer]);
  } catch (err) {
    port!.postMessage({ kind: 'failed', id: message.id, message: (err as Error).message } satisfies FromWorker);
  }
}

try {
  // Linux keeps a nice value per thread and new threads inherit it: set here, before the session
  // creates its thread pool, it lowers this worker and its intra-op threads, not the process.
  if (setup.niceness !== undefined) setPriority(0, setup.niceness);
  const session = await openSession(setup.modelPath, setup.threads, setup.outputName);
  // Batches arrive one at a time from the batcher; a chain keeps them in order regardless.
  let chain = Promise.resolve();
  port.on('message', (message: ToWorker) => {
    chain = chain.then(() => serve(session, message));
  });
  port.postMessage({ kind: 'ready' } satisfies FromWorker);
} catch (err) {
  port.postMessage({ kind: 'load_failed', message: (err as Error).message } satisfies FromWorker);
}
