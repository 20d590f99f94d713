/**
 * Ending batches, and the retention sweep. A batch whose segments are all committed (or skipped,
 * after a cancel or its expiry) is finalized: its output and error files are recorded over the
 * segment parts already written (no copy), the lines of an expired batch that never ran go to
 * the error file as `batch_expired`, admitted lines never recorded are refunded, and the final
 * status is set. Every step is idempotent, so any replica may finalize, and again after a crash.
 *
 * The sweep, on every replica: expires batches past their completion window, finalizes those a
 * crash left unfinished, and deletes files whose retention has passed (content first deleted
 * with the record, at once).
 */
import type { BatchQueue, BatchRecord, BatchSettlement } from '../settlement/batch-store.js';
import type { BatchFileStore, StoredFile } from './file-store.js';
import { dataKeyOf, derivedFileId, type BatchFiles } from './files.js';
import { linesOf } from './jsonl.js';
import { contentBytes, neverRanLine } from './segment-result.js';
import { newDataKey, openObjectSliced, sealObjectSliced, unwrapDataKey, type KeyRing } from './sealing.js';

export interface FinalizerDeps {
  readonly store: BatchFileStore;
  readonly ring: KeyRing;
  readonly files: BatchFiles;
  readonly queue: BatchSettlement & BatchQueue;
  /** How long files (and the batch record) are kept once the batch ends, seconds. */
  readonly retentionSeconds: number;
  readonly now?: () => number;
}

const ENDING = new Set(['finalizing', 'cancelling', 'expired', 'failed']);
const EXPIRED_MESSAGE = 'This request could not be executed before the completion window expired.';

/** Finalizes batches and sweeps expired ones and expired files. */
export class Finalizer {
  private readonly now: () => number;

  constructor(private readonly deps: FinalizerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Ends the batch if its work is over; a no-op otherwise, or when it already ended. */
  async finalize(org: string, batch: string): Promise<void> {
    const record = await this.deps.queue.get(org, batch);
    if (!record || !ENDING.has(record.status) || record.segmentsDone < record.segments) return;
    if (record.status === 'expired') await this.writeNeverRan(record);
    const keepUntil = Math.floor(this.now() / 1000) + this.deps.retentionSeconds;
    const output = await this.recordFile(record, 'output', keepUntil);
    const errors = await this.recordFile(record, 'errors', keepUntil);
    await this.keepInput(record, keepUntil);
    await this.deps.queue.finish(org, batch, { output, error: errors }, this.deps.retentionSeconds * 1000);
  }

  /** One pass of the sweep; returns how many batches and files it acted on. */
  async sweep(): Promise<{ batches: number; files: number }> {
    const now = this.now();
    let batches = 0;
    for (const open of await this.deps.queue.unfinished(100)) {
      if (open.expiresAt <= now) await this.deps.queue.expire(open.org, open.batch);
      const record = await this.deps.queue.get(open.org, open.batch);
      if (record && ENDING.has(record.status) && record.segmentsDone >= record.segments) {
        await this.finalize(open.org, open.batch);
        batches += 1;
      }
    }
    const expired = await this.deps.store.expiredFiles(Math.floor(now / 1000), 100);
    for (const file of expired) {
      await this.deps.store.deleteFile(file.org, file.id);
      await this.deps.store.deleteGroup(file.group);
    }
    return { batches, files: expired.length };
  }

  /** Records the output or error file over the parts written; '' (and nothing kept) when it is empty. */
  private async recordFile(record: BatchRecord, part: 'output' | 'errors', keepUntil: number): Promise<string> {
    const id = derivedFileId(record.id, part);
    const group = `${part === 'output' ? 'out' : 'err'}-${record.id}`;
    const wrapped = part === 'output' ? record.dataKeys.output : record.dataKeys.error;
    const key = unwrapDataKey(this.deps.ring, wrapped, id);
    let bytes = 0;
    for (let s = 0; s < record.segments; s++) {
      const sealed = await this.deps.store.getPart(group, s);
      if (!sealed) continue;
      const plain = await openObjectSliced(key, sealed, `${group}/${s}`);
      bytes += part === 'output' ? contentBytes(plain) : plain.length;
    }
    if (bytes === 0) {
      await this.deps.store.deleteGroup(group);
      return '';
    }
    const file: StoredFile = {
      id,
      org: record.org,
      purpose: 'batch_output',
      bytes,
      createdAt: Math.floor(this.now() / 1000),
      expiresAt: keepUntil,
      filenameSealed: this.deps.files.sealName(key, id, `${record.id}_${part === 'output' ? 'output' : 'error'}.jsonl`),
      dataKey: wrapped,
      group,
      parts: record.segments,
      lines: [],
      ...(part === 'output' ? { ledgered: true } : {}),
    };
    await this.deps.store.saveFile(file);
    return id;
  }

  /** The input file is kept for the retention period after its batch ends. */
  private async keepInput(record: BatchRecord, keepUntil: number): Promise<void> {
    const input = await this.deps.store.getFile(record.org, record.inputFileId);
    if (input && input.expiresAt < keepUntil) await this.deps.store.saveFile({ ...input, expiresAt: keepUntil });
  }

  /** An expired batch: every line of a segment that never committed goes to the error file. */
  private async writeNeverRan(record: BatchRecord): Promise<void> {
    const input = await this.deps.store.getFile(record.org, record.inputFileId);
    if (!input) return;
    const inKey = dataKeyOf(this.deps.ring, input);
    const errKey = unwrapDataKey(this.deps.ring, record.dataKeys.error, derivedFileId(record.id, 'errors'));
    let first = 0;
    for (let s = 0; s < record.segments; s++) {
      const lineCount = input.lines[s] ?? 0;
      const ran = await this.deps.store.getPart(`out-${record.id}`, s);
      const sealed = ran ? null : await this.deps.store.getPart(input.group, s);
      if (sealed) {
        const lines = linesOf(await openObjectSliced(inKey, sealed, `${input.group}/${s}`)).map((raw, i) => {
          const customId = (JSON.parse(raw.toString('utf8')) as { custom_id: string }).custom_id;
          return `${neverRanLine(record.id, first + i, customId, 'batch_expired', EXPIRED_MESSAGE)}\n`;
        });
        await this.deps.store.putPart(
          `err-${record.id}`,
          s,
          await sealObjectSliced(errKey, Buffer.from(lines.join('')), `err-${record.id}/${s}`),
        );
      }
      first += lineCount;
    }
  }
}

/** Fresh data keys for a new batch's output and error files (bound to their derived ids). */
export function outputDataKeys(ring: KeyRing, batch: string): { output: string; error: string } {
  return {
    output: newDataKey(ring, derivedFileId(batch, 'output')).wrapped,
    error: newDataKey(ring, derivedFileId(batch, 'errors')).wrapped,
  };
}
