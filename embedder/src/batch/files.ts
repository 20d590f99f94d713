/**
 * The Files API's logic for batch files: upload (streamed, checked, segmented, sealed), read,
 * list, download and delete, each scoped to the calling organization (another organization's
 * file id is simply not found). Content only ever reaches the store sealed under the file's own
 * data key; the key-encryption key stays in memory, read from its Secret file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ProblemError } from '../../../openapi/problems.js';
import { FILE_ID, type BatchFileStore, type StoredFile } from './file-store.js';
import { segmentLines, type FileLimits, type LineParser } from './jsonl.js';
import { newDataKey, openObject, openObjectSliced, sealObject, sealObjectSliced, unwrapDataKey, type KeyRing } from './sealing.js';

/** OpenAI's file object. */
export interface FileObject {
  readonly id: string;
  readonly object: 'file';
  readonly bytes: number;
  readonly created_at: number;
  readonly expires_at: number;
  readonly filename: string;
  readonly purpose: 'batch' | 'batch_output';
  readonly status: 'processed';
  readonly status_details: null;
}

export interface BatchFilesDeps {
  readonly store: BatchFileStore;
  readonly ring: KeyRing;
  readonly limits: FileLimits;
  /** How long a file is kept after upload, or after the batch that uses or made it ends. */
  readonly retentionSeconds: number;
  readonly parseLine: LineParser;
  /** Wall clock, ms. */
  readonly now?: () => number;
}

const MAX_FILENAME = 255;
const NOT_FOUND = 'No such file for this organization.';

/** A file id derived from its owner (a batch's output), so writing its record twice writes one file. */
export function derivedFileId(owner: string, part: string): string {
  return `file-${createHash('sha256').update(`${owner}:${part}`).digest('hex').slice(0, 24)}`;
}

/** The file's data key (in memory only). */
export function dataKeyOf(ring: KeyRing, file: StoredFile): Buffer {
  return unwrapDataKey(ring, file.dataKey, file.id);
}

/** The Files API over one store. */
export class BatchFiles {
  private readonly now: () => number;

  constructor(private readonly deps: BatchFilesDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Stores an upload as it streams in; throws ProblemError for a malformed or oversized file. */
  async upload(org: string, filename: string, content: AsyncIterable<Buffer>): Promise<StoredFile> {
    const { store, ring } = this.deps;
    const id = `file-${randomBytes(12).toString('hex')}`;
    const group = `in-${id}`;
    const dataKey = newDataKey(ring, id);
    const lines: number[] = [];
    let bytes = 0;
    try {
      for await (const segment of segmentLines(content, this.deps.parseLine, this.deps.limits)) {
        await store.putPart(group, lines.length, await sealObjectSliced(dataKey.key, segment.raw, `${group}/${lines.length}`));
        lines.push(segment.lines);
        bytes += segment.raw.length;
      }
    } catch (error) {
      await store.deleteGroup(group).catch(() => undefined);
      throw error;
    }
    const created = Math.floor(this.now() / 1000);
    const file: StoredFile = {
      id,
      org,
      purpose: 'batch',
      bytes,
      createdAt: created,
      expiresAt: created + this.deps.retentionSeconds,
      filenameSealed: this.sealName(dataKey.key, id, filename.slice(0, MAX_FILENAME)),
      dataKey: dataKey.wrapped,
      group,
      parts: lines.length,
      lines,
    };
    await store.saveFile(file);
    return file;
  }

  /** The organization's file, or a 404 problem (also for another organization's id). */
  async get(org: string, id: string): Promise<StoredFile> {
    const file = FILE_ID.test(id) ? await this.deps.store.getFile(org, id) : null;
    if (!file) throw new ProblemError('not_found', NOT_FOUND);
    return file;
  }

  /** The organization's files, newest first, after the cursor `after` (a file id), at most `limit`. */
  async list(
    org: string,
    options: { after?: string; limit: number; purpose?: string },
  ): Promise<{ files: StoredFile[]; hasMore: boolean }> {
    let files = await this.deps.store.listFiles(org);
    if (options.purpose) files = files.filter((f) => f.purpose === options.purpose);
    if (options.after) {
      const at = files.findIndex((f) => f.id === options.after);
      files = at === -1 ? [] : files.slice(at + 1);
    }
    return { files: files.slice(0, options.limit), hasMore: files.length > options.limit };
  }

  /** Deletes the record and then the content, at once. */
  async delete(org: string, id: string): Promise<void> {
    const file = await this.get(org, id);
    await this.deps.store.deleteFile(org, id);
    // An output file's parts belong to its batch's group, deleted with this file.
    await this.deps.store.deleteGroup(file.group);
  }

  /** Keeps `file` at least until `untilMs` plus the retention period (a batch using it may run that long). */
  async keepFor(file: StoredFile, untilMs: number): Promise<void> {
    const expiresAt = Math.floor(untilMs / 1000) + this.deps.retentionSeconds;
    if (file.expiresAt < expiresAt) await this.deps.store.saveFile({ ...file, expiresAt });
  }

  /** The plain content, part by part, opened as it is read. */
  async *content(file: StoredFile): AsyncGenerator<Buffer> {
    const key = dataKeyOf(this.deps.ring, file);
    for (let index = 0; index < file.parts; index++) {
      const sealed = await this.deps.store.getPart(file.group, index);
      if (!sealed) continue;
      const plain = await openObjectSliced(key, sealed, `${file.group}/${index}`);
      // An output part opens with its segment's ledger line (counts only), which is not content.
      yield file.ledgered ? plain.subarray(plain.indexOf(0x0a) + 1) : plain;
    }
  }

  /** OpenAI's file object for `file`. */
  view(file: StoredFile): FileObject {
    const key = dataKeyOf(this.deps.ring, file);
    return {
      id: file.id,
      object: 'file',
      bytes: file.bytes,
      created_at: file.createdAt,
      expires_at: file.expiresAt,
      filename: openObject(key, Buffer.from(file.filenameSealed, 'base64url'), `name:${file.id}`).toString('utf8'),
      purpose: file.purpose,
      status: 'processed',
      status_details: null,
    };
  }

  /** Seals a file name under the file's key (used for batch output files too). */
  sealName(key: Buffer, id: string, name: string): string {
    return sealObject(key, Buffer.from(name, 'utf8'), `name:${id}`).toString('base64url');
  }
}
