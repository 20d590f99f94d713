/**
 * The batch workers of one embedder replica. Each claims a segment from the durable queue
 * (every replica claims from the same queue, least-served organization first), opens its lines,
 * runs them through the line executor on the engine's batch lane, writes the segment's result
 * parts, and commits the segment's settlement, in that order, so that whatever dies at any point
 * (this process, Redis's primary, the store) a re-run finds the written result and commits it
 * once: each line is embedded, billed and output once. A claimed segment is kept alive by
 * heartbeats; one whose worker died is reclaimed by another after the lease.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BatchQueue, BatchRecord, BatchSettlement, LineAdmission, SegmentTask } from '../settlement/batch-store.js';
import type { BatchFileStore, StoredFile } from './file-store.js';
import { dataKeyOf, derivedFileId } from './files.js';
import type { Finalizer } from './finalize.js';
import { linesOf } from './jsonl.js';
import type { LineExecutor, LineResult } from './line-executor.js';
import { ledgerOf, segmentResult } from './segment-result.js';
import { openObjectSliced, sealObjectSliced, unwrapDataKey, type KeyRing } from './sealing.js';

export interface RunnerOptions {
  /** Segments this replica runs at once (enough to keep the model's batches full). */
  readonly workers: number;
  /** A claimed segment not heartbeated for this long is another worker's to take. */
  readonly leaseMs: number;
  /** How long an idle worker waits before asking the queue again. */
  readonly pollMs: number;
}

export interface RunnerDeps {
  readonly store: BatchFileStore;
  readonly ring: KeyRing;
  readonly queue: BatchSettlement & BatchQueue;
  readonly execute: LineExecutor;
  readonly finalizer: Finalizer;
  /** False while the model loads: nothing is claimed until it can run. */
  readonly isReady: () => boolean;
  /** Faults of the loop (never line content). */
  readonly onError: (error: unknown) => void;
  readonly now?: () => number;
}

/**
 * One admission call for a whole segment: each line asks once it is tokenized (or finishes
 * without asking, failed before); when every line has done one or the other, the asks go to
 * Redis together.
 */
function segmentAdmission(count: number, admitAll: (lines: Array<{ index: number; tokens: number }>) => Promise<LineAdmission[]>) {
  const asks: Array<{ index: number; tokens: number; resolve: (a: LineAdmission) => void; reject: (e: unknown) => void }> = [];
  let settled = 0;
  const flush = () => {
    if (settled + asks.length < count || asks.length === 0) return;
    const batch = asks.splice(0);
    settled += batch.length;
    admitAll(batch).then(
      (answers) => {
        for (const [i, ask] of batch.entries()) ask.resolve(answers[i] ?? 'stopped');
      },
      (error: unknown) => {
        for (const ask of batch) ask.reject(error);
      },
    );
  };
  return {
    ask: (index: number, tokens: number) =>
      new Promise<LineAdmission>((resolve, reject) => {
        asks.push({ index, tokens, resolve, reject });
        flush();
      }),
    /** A line that ended without asking. */
    skip: () => {
      settled += 1;
      flush();
    },
  };
}

/** The workers; `start` runs them until `stop`. */
export class BatchRunner {
  private readonly consumer = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly inputs = new Map<string, StoredFile>();
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly now: () => number;

  constructor(
    private readonly deps: RunnerDeps,
    private readonly options: RunnerOptions,
  ) {
    this.now = deps.now ?? Date.now;
  }

  start(): void {
    this.running = true;
    this.loops = Array.from({ length: this.options.workers }, () => this.loop());
  }

  /** Stops claiming; segments in progress finish (their results committed). */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let task: SegmentTask | null = null;
      try {
        task = this.deps.isReady() ? await this.deps.queue.claim(this.consumer, this.options.leaseMs) : null;
        if (task?.task === 'finalize') await this.deps.finalizer.finalize(task.org, task.batch);
        else if (task) await this.withHeartbeat(task, () => this.runSegment(task!));
      } catch (error) {
        this.deps.onError(error);
      }
      // Jitter keeps idle replicas from asking Redis in step.
      if (!task) await sleep(this.options.pollMs * (0.5 + Math.random()));
    }
  }

  private async withHeartbeat(task: SegmentTask, work: () => Promise<void>): Promise<void> {
    const beat = setInterval(() => void this.deps.queue.heartbeat(task, this.consumer).catch(this.deps.onError), this.options.leaseMs / 3);
    try {
      await work();
    } finally {
      clearInterval(beat);
    }
  }

  /** Runs one segment, or commits the result a worker before it wrote. */
  async runSegment(task: SegmentTask): Promise<void> {
    const { store, queue, ring } = this.deps;
    const record = await queue.get(task.org, task.batch);
    if (!record) return void (await queue.record(task, [], this.now()));
    const outGroup = `out-${task.batch}`;
    const outKey = unwrapDataKey(ring, record.dataKeys.output, derivedFileId(task.batch, 'output'));
    const written = await store.getPart(outGroup, task.segment);
    if (written) return this.commit(task, ledgerOf(await openObjectSliced(outKey, written, `${outGroup}/${task.segment}`)));

    const opened = await this.openSegment(task, record);
    if (!opened) {
      await queue.fail(task.org, task.batch, 'input_file_unavailable');
      return void (await queue.record(task, [], this.now()));
    }
    const results = await this.runLines(task, record, opened.lines, opened.first);
    if (results.some((r) => r.kind === 'not_run')) {
      // The batch stopped, or another worker settled these lines: commit whatever was written.
      const again = await store.getPart(outGroup, task.segment);
      const ledger = again ? ledgerOf(await openObjectSliced(outKey, again, `${outGroup}/${task.segment}`)) : [];
      return this.commit(task, ledger);
    }
    const result = segmentResult(task.batch, opened.first, results);
    const errGroup = `err-${task.batch}`;
    if (result.errors.length > 0) {
      const errKey = unwrapDataKey(ring, record.dataKeys.error, derivedFileId(task.batch, 'errors'));
      await store.putPart(errGroup, task.segment, await sealObjectSliced(errKey, result.errors, `${errGroup}/${task.segment}`));
    }
    const won = await store.putPartIfAbsent(
      outGroup,
      task.segment,
      await sealObjectSliced(outKey, result.output, `${outGroup}/${task.segment}`),
    );
    if (won) return this.commit(task, result.ledger);
    const first = (await store.getPart(outGroup, task.segment))!;
    return this.commit(task, ledgerOf(await openObjectSliced(outKey, first, `${outGroup}/${task.segment}`)));
  }

  private async commit(task: SegmentTask, ledger: Parameters<BatchSettlement['record']>[1]): Promise<void> {
    const committed = await this.deps.queue.record(task, ledger, this.now());
    if (committed.ended) await this.deps.finalizer.finalize(task.org, task.batch);
  }

  /** The segment's lines and the number of its first line; null when the input is gone or unreadable. */
  private async openSegment(task: SegmentTask, record: BatchRecord): Promise<{ lines: Buffer[]; first: number } | null> {
    let input = this.inputs.get(record.inputFileId);
    if (!input) {
      const found = await this.deps.store.getFile(task.org, record.inputFileId);
      if (!found) return null;
      input = found;
      if (this.inputs.size > 100) this.inputs.clear();
      this.inputs.set(found.id, found);
    }
    const sealed = await this.deps.store.getPart(input.group, task.segment);
    if (!sealed) return null;
    const plain = await openObjectSliced(dataKeyOf(this.deps.ring, input), sealed, `${input.group}/${task.segment}`);
    const first = input.lines.slice(0, task.segment).reduce((a, b) => a + b, 0);
    return { lines: linesOf(plain), first };
  }

  private async runLines(task: SegmentTask, record: BatchRecord, lines: readonly Buffer[], first: number): Promise<LineResult[]> {
    const admission = segmentAdmission(lines.length, (asks) =>
      this.deps.queue.admit(
        task.org,
        task.batch,
        asks.map((a) => ({ line: first + a.index, tokens: a.tokens })),
        this.now(),
      ),
    );
    return Promise.all(
      lines.map(async (raw, index) => {
        let asked = false;
        try {
          return await this.deps.execute(raw, {
            org: task.org,
            model: record.model,
            admit: (tokens) => {
              asked = true;
              return admission.ask(index, tokens);
            },
          });
        } finally {
          if (!asked) admission.skip();
        }
      }),
    );
  }
}
