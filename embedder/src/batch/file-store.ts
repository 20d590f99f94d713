/**
 * Where batch files live at rest, behind one small interface with two implementations: a
 * directory (fs-store.ts, the embedded default of `make up`, shared by replicas on one host)
 * and PostgreSQL (pg-store.ts, a store a platform team runs for Kubernetes: durable,
 * replicated, backed up, shared by every replica). The store only ever sees sealed bytes
 * (sealing.ts) and identifiers: a file's content lives in numbered parts of a group, and its
 * record holds counts, times, the wrapped data key and the sealed file name.
 */

/** A file as the store keeps it. Times are Unix seconds. */
export interface StoredFile {
  readonly id: string;
  readonly org: string;
  readonly purpose: 'batch' | 'batch_output';
  /** Plain-text bytes of the content. */
  readonly bytes: number;
  readonly createdAt: number;
  /** When the retention sweep deletes it. */
  readonly expiresAt: number;
  /** The client's file name, sealed (base64url): it may name a patient. */
  readonly filenameSealed: string;
  /** The file's data key, wrapped by the key-encryption key. */
  readonly dataKey: string;
  /** The group holding the content's parts, and how many parts (missing parts are empty). */
  readonly group: string;
  readonly parts: number;
  /** Requests per part (input files), so a batch knows its lines without reading the text. */
  readonly lines: readonly number[];
  /** Output files: each part starts with one line of the segment's ledger, which is not content. */
  readonly ledgered?: boolean;
}

/** The store's operations; faults throw, absence is null/false. */
export interface BatchFileStore {
  /** Writes part `index` of `group` (replacing it); durable when the promise resolves. */
  putPart(group: string, index: number, sealed: Buffer): Promise<void>;
  /** Writes the part only if absent; false when another writer got there first. */
  putPartIfAbsent(group: string, index: number, sealed: Buffer): Promise<boolean>;
  getPart(group: string, index: number): Promise<Buffer | null>;
  /** Deletes every part of `group` (absent is fine). */
  deleteGroup(group: string): Promise<void>;
  /** Inserts or replaces the record. */
  saveFile(file: StoredFile): Promise<void>;
  getFile(org: string, id: string): Promise<StoredFile | null>;
  /** The organization's files, newest first. */
  listFiles(org: string): Promise<StoredFile[]>;
  /** Removes the record; false when there was none. */
  deleteFile(org: string, id: string): Promise<boolean>;
  /** Records whose `expiresAt` is at or before `now` (seconds), at most `limit`. */
  expiredFiles(now: number, limit: number): Promise<StoredFile[]>;
  /** Whether the store answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** File and batch ids: what a path parameter may be before any store sees it. */
export const FILE_ID = /^file-[0-9a-f]{24}$/;
export const BATCH_ID = /^batch_[0-9a-f]{24}$/;
/** Group names: the content of one file or one batch's outputs. */
export const GROUP = /^(in|out|err)-[0-9a-z_-]{1,64}$/;
