/**
 * The audit export an outside auditor checks with nothing secret (JSON lines): a header naming
 * the trail, the filter and the public key; the records, oldest first, each with its hash and
 * signature; and a manifest signed with the trail's key when the export was taken (how many
 * records, which seqs, the trail's head then, and a digest of every record's hash in order).
 * Offline, each record's hash is recomputed from its content, consecutive records must link, and
 * the manifest's signature must check with the published key, so an edited, removed, reordered,
 * inserted or cut-off record, or a forged manifest, fails. An unfiltered export must run from
 * record 1 to the head; given the auditor's earlier exports, it must extend each of them (the
 * same hash at their head's seq), which catches a rollback of Redis and of the checkpoint file.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { GENESIS_HASH, type AuditRecord, type ChainHead } from './chain.js';
import { fingerprint, publicKeyPem, signedBy } from './signing.js';
import { linkFault } from './verify.js';

const EXPORT_FORMAT = 'ctg-audit-export/1';
/** A line longer than this is not one we wrote (bounds what verify reads per line). */
const MAX_LINE = 1_048_576;
const FILTER_FIELDS = ['actor', 'action', 'target', 'since', 'until'] as const;

export type ExportFilter = Readonly<Record<(typeof FILTER_FIELDS)[number], string | null>>;

/** The signed part of an export: what it holds and what the trail's head was. */
interface Manifest {
  readonly format: string;
  readonly trail: string;
  readonly exportedAt: string;
  readonly filter: ExportFilter;
  readonly records: number;
  readonly first: number | null;
  readonly last: number | null;
  readonly head: ChainHead;
  /** SHA-256 (hex) over every exported record's hash and a newline, in order. */
  readonly digest: string;
}

function manifestStatement(m: Manifest): Buffer {
  const filter = FILTER_FIELDS.map((field) => m.filter[field] ?? null);
  const fields = [m.format, m.trail, m.exportedAt, filter, m.records, m.first, m.last, m.head.seq, m.head.hash, m.digest];
  return Buffer.from(`ctg-audit-export-v1\n${JSON.stringify(fields)}`);
}

/** The export's lines for `records` (already filtered, oldest first, none past `head`). */
export async function* exportLines(
  records: AsyncIterable<AuditRecord>,
  context: { trail: string; head: ChainHead; filter: ExportFilter; exportedAt: string; publicKey: KeyObject; sign: (s: Buffer) => string },
): AsyncGenerator<string> {
  const { trail, head, filter, exportedAt, publicKey } = context;
  yield `${JSON.stringify({ format: EXPORT_FORMAT, trail, exportedAt, filter, publicKey: publicKeyPem(publicKey), fingerprint: fingerprint(publicKey) })}\n`;
  const digest = createHash('sha256');
  let count = 0;
  let first: number | null = null;
  let last: number | null = null;
  for await (const record of records) {
    digest.update(`${record.hash}\n`);
    count += 1;
    first ??= record.seq;
    last = record.seq;
    yield `${JSON.stringify(record)}\n`;
  }
  const manifest: Manifest = {
    format: EXPORT_FORMAT,
    trail,
    exportedAt,
    filter,
    records: count,
    first,
    last,
    head,
    digest: digest.digest('hex'),
  };
  yield `${JSON.stringify({ manifest, sig: context.sign(manifestStatement(manifest)) })}\n`;
}

/** The verdict on an export file. */
export type ExportVerdict =
  | {
      readonly ok: true;
      readonly file: string;
      readonly trail: string;
      readonly exportedAt: string;
      readonly records: number;
      readonly head: ChainHead;
      readonly complete: boolean;
      readonly extends: number;
    }
  | { readonly ok: false; readonly file: string; readonly brokenAt: number | null; readonly reason: string };

/**
 * Checks the export at `file` with `keys`; `earlier` are exports the auditor verified before.
 * Reads each file once, streamed; a fault is a verdict, never an exception (except I/O).
 */
export async function verifyExportFile(file: string, keys: readonly KeyObject[], earlier: readonly string[] = []): Promise<ExportVerdict> {
  const heads: Array<{ head: ChainHead; file: string }> = [];
  for (const path of earlier) {
    const verdict = await checkFile(path, keys, []);
    if (!verdict.ok) return { ok: false, file, brokenAt: null, reason: `the earlier export ${path} does not verify: ${verdict.reason}` };
    heads.push({ head: verdict.head, file: path });
  }
  return checkFile(file, keys, heads);
}

async function checkFile(
  file: string,
  keys: readonly KeyObject[],
  earlier: ReadonlyArray<{ head: ChainHead; file: string }>,
): Promise<ExportVerdict> {
  const fail = (reason: string, brokenAt: number | null = null): ExportVerdict => ({ ok: false, file, brokenAt, reason });
  let walk: Walk | null = null;
  let header: Record<string, unknown> | null = null;
  let tail: Record<string, unknown> | null = null;
  let number = 0;
  for await (const line of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })) {
    number += 1;
    if (line === '') continue;
    const value = parseLine(line);
    if (!value) return fail(`line ${number} is not a JSON object`);
    if (tail) return fail(`line ${number} follows the signed manifest: the export was altered`);
    if (!header) {
      if (value.format !== EXPORT_FORMAT) return fail(`line ${number} is not an audit export header (format ${EXPORT_FORMAT})`);
      header = value;
      walk = new Walk(earlier, isComplete(value.filter));
    } else if ('manifest' in value) tail = value;
    else {
      const fault = walk!.add(value as unknown as AuditRecord);
      if (fault) return fail(fault.reason, fault.brokenAt);
    }
  }
  if (!header || !walk) return fail('the file is empty');
  if (!tail) return fail('the export has no signed manifest: it was cut short');
  return finish(file, header, tail, walk, keys, earlier);
}

function finish(
  file: string,
  header: Record<string, unknown>,
  tail: Record<string, unknown>,
  walk: Walk,
  keys: readonly KeyObject[],
  earlier: ReadonlyArray<{ head: ChainHead; file: string }>,
): ExportVerdict {
  const fail = (reason: string, brokenAt: number | null = null): ExportVerdict => ({ ok: false, file, brokenAt, reason });
  const manifest = tail.manifest as Manifest;
  if (!manifest || typeof manifest !== 'object' || !manifest.head || !manifest.filter) return fail('the manifest is malformed');
  if (!signedBy(keys, manifestStatement(manifest), tail.sig))
    return fail(`the manifest is not signed by the public key given (the export names key ${String(header.fingerprint)})`);
  if (
    manifest.trail !== header.trail ||
    manifest.exportedAt !== header.exportedAt ||
    JSON.stringify(FILTER_FIELDS.map((f) => manifest.filter[f])) !==
      JSON.stringify(FILTER_FIELDS.map((f) => (header.filter as ExportFilter)?.[f]))
  )
    return fail('the header does not match the signed manifest');
  if (manifest.records !== walk.count || manifest.first !== walk.first || manifest.last !== walk.last || manifest.digest !== walk.digest())
    return fail(`the records are not the ${manifest.records} the manifest signed: records were removed, added, changed or reordered`);
  const complete = isComplete(manifest.filter);
  if (complete && (walk.first ?? 1) !== 1) return fail(`the export starts at record ${walk.first}, not 1`, 1);
  if (complete && (walk.last ?? 0) !== manifest.head.seq)
    return fail(`the export ends at record ${walk.last ?? 0} but the trail's head was record ${manifest.head.seq}`, (walk.last ?? 0) + 1);
  if (complete && walk.lastHash !== (manifest.head.seq === 0 ? GENESIS_HASH : manifest.head.hash))
    return fail("the last record is not the trail's head", walk.last);
  for (const { head, file: path } of earlier) {
    if (!complete) return fail('only an unfiltered export can be checked against earlier exports');
    if (head.seq > manifest.head.seq)
      return fail(
        `${path} ended at record ${head.seq} but this export ends at record ${manifest.head.seq}: the trail was cut short or rolled back`,
        manifest.head.seq + 1,
      );
  }
  if (walk.fork) return fail(walk.fork.reason, walk.fork.brokenAt);
  return {
    ok: true,
    file,
    trail: manifest.trail,
    exportedAt: manifest.exportedAt,
    records: walk.count,
    head: manifest.head,
    complete,
    extends: earlier.length,
  };
}

/** The records seen so far: their digest, their links, and the earlier exports' heads they meet. */
class Walk {
  count = 0;
  first: number | null = null;
  last: number | null = null;
  lastHash: string = GENESIS_HASH;
  fork: { brokenAt: number; reason: string } | null = null;
  private readonly hash = createHash('sha256');
  private readonly claims: Map<number, { hash: string; file: string }>;

  constructor(
    earlier: ReadonlyArray<{ head: ChainHead; file: string }>,
    /** An unfiltered export: every record from 1, no gaps. */
    private readonly complete: boolean,
  ) {
    this.claims = new Map(earlier.map(({ head, file }) => [head.seq, { hash: head.hash, file }]));
  }

  add(record: AuditRecord): { brokenAt: number; reason: string } | null {
    if (typeof record.seq !== 'number' || (this.last !== null && record.seq <= this.last))
      return { brokenAt: record.seq, reason: `record ${record.seq} is out of order` };
    // Consecutive records must link; a filtered export's gaps are the filter's.
    const follows = this.complete || (this.last ?? 0) + 1 === record.seq;
    const previous = follows ? { seq: this.last ?? 0, hash: this.lastHash } : { seq: record.seq - 1, hash: record.prevHash };
    const fault = linkFault(record, previous);
    if (fault) return fault;
    const claim = this.claims.get(record.seq);
    if (claim && claim.hash !== record.hash && !this.fork)
      this.fork = {
        brokenAt: record.seq,
        reason: `record ${record.seq} is not the one ${claim.file} ended with: the trail was rolled back or replaced`,
      };
    this.hash.update(`${record.hash}\n`);
    this.count += 1;
    this.first ??= record.seq;
    this.last = record.seq;
    this.lastHash = record.hash;
    return null;
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}

function isComplete(filter: unknown): boolean {
  return typeof filter === 'object' && filter !== null && FILTER_FIELDS.every((field) => (filter as ExportFilter)[field] === null);
}

function parseLine(line: string): Record<string, unknown> | null {
  if (line.length > MAX_LINE) return null;
  try {
    const value = JSON.parse(line) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
