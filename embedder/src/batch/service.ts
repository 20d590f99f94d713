/**
 * Starts the Batch API's parts from its settings: the file store (directory or PostgreSQL), the
 * key ring, the Redis queue and settlement, the workers and the sweep. main.ts composes it with
 * the line executor (the HTTP layer's rules) and the engine's readiness.
 */
import type { RedisSettings } from '../../../contract/redis-target.js';
import { openBatchStore } from '../settlement/batch-store.js';
import type { BatchConfig } from '../config.js';
import { Batches } from './batches.js';
import type { BatchFileStore } from './file-store.js';
import { BatchFiles } from './files.js';
import { Finalizer } from './finalize.js';
import { openDirectoryStore } from './fs-store.js';
import type { LineParser } from './jsonl.js';
import type { LineExecutor } from './line-executor.js';
import { openPostgresStore } from './pg-store.js';
import { BatchRunner } from './runner.js';
import { parseKeyRing } from './sealing.js';

export interface BatchServiceDeps {
  readonly redis: RedisSettings;
  readonly parseLine: LineParser;
  readonly execute: LineExecutor;
  readonly isReady: () => boolean;
  /** Faults of the workers and the sweep (never content). */
  readonly onError: (error: unknown) => void;
  /** Wraps the Redis store (tests: grant records issued as authz's Check would). */
  readonly wrapStore?: (store: ReturnType<typeof openBatchStore>) => ReturnType<typeof openBatchStore>;
}

/** The running Batch API: what the routes need, and how to stop it. */
export interface BatchService {
  readonly files: BatchFiles;
  readonly batches: Batches;
  readonly limits: { readonly maxBytes: number; readonly maxLines: number };
  readonly store: BatchFileStore;
  stop(): Promise<void>;
}

/** Opens the store (creating its tables or directory), starts the workers and the sweep. */
export async function startBatchService(config: BatchConfig, deps: BatchServiceDeps): Promise<BatchService> {
  const ring = parseKeyRing(config.keys);
  const store =
    config.store.kind === 'postgres'
      ? await openPostgresStore({ url: config.store.url, timeoutMs: 10_000 })
      : await openDirectoryStore(config.store.path);
  const limits = { maxBytes: config.maxFileBytes, maxLines: config.maxFileLines };
  const files = new BatchFiles({ store, ring, limits, retentionSeconds: config.retentionSeconds, parseLine: deps.parseLine });
  const opened = openBatchStore({ ...deps.redis, timeoutMs: Math.max(deps.redis.timeoutMs, 2_000) });
  const queue = deps.wrapStore ? deps.wrapStore(opened) : opened;
  const finalizer = new Finalizer({ store, ring, files, queue, retentionSeconds: config.retentionSeconds });
  const runner = new BatchRunner(
    { store, ring, queue, execute: deps.execute, finalizer, isReady: deps.isReady, onError: deps.onError },
    { workers: config.workers, leaseMs: config.leaseMs, pollMs: config.pollMs },
  );
  runner.start();
  const sweep = setInterval(() => void finalizer.sweep().catch(deps.onError), config.sweepMs);
  sweep.unref();
  return {
    files,
    batches: new Batches(queue, files, ring),
    limits,
    store,
    async stop() {
      clearInterval(sweep);
      await runner.stop();
      queue.close();
      await store.close();
    },
  };
}
