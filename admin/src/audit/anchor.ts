/**
 * Checkpoints of the audit chain kept outside Redis: after every append, one line
 * `{"trail","seq","hash","at","sig"}` is appended to AUDIT_ANCHOR_FILE, `sig` being the record's
 * own Ed25519 signature. `audit verify` checks the chain against the checkpoints of its trail,
 * so restoring an older copy of Redis, or cutting the trail short and re-pointing its head, is
 * detected even by someone who can write all of Redis. The file is append-only by use (O_APPEND
 * writes of one short line each, so processes sharing it never interleave); keep it on storage
 * Redis's operators cannot rewrite (a separate volume, `chattr +a`, an object lock). Against
 * someone who can rewrite both, the auditor's own copies of earlier exports are the check.
 */
import { createReadStream, existsSync, mkdirSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { AuditRecord } from './chain.js';

/** A checkpoint line longer than this is not ours (bounds what verify reads per line). */
const MAX_LINE = 1024;

/** One checkpoint of this trail as read: what the chain had at `seq`, and its signature. */
export interface Checkpoint {
  readonly seq: number;
  readonly hash: string;
  readonly sig: string;
  /** Where it came from, for the verdict's reason (`line 7 of the checkpoint file`). */
  readonly source: string;
}

/** This trail's checkpoints, or the first line that is not a checkpoint at all. */
export type AnchorRead =
  | { readonly ok: true; readonly checkpoints: readonly Checkpoint[] }
  | { readonly ok: false; readonly reason: string };

export class AuditAnchor {
  /**
   * @param file the checkpoint file (created on the first append, mode 600)
   * @param trail which trail this is (the Redis key prefix), so trails may share one file
   */
  constructor(
    private readonly file: string,
    private readonly trail: string,
  ) {}

  /** Appends the checkpoint of a just-appended record. */
  async checkpoint(record: AuditRecord): Promise<void> {
    const line = { trail: this.trail, seq: record.seq, hash: record.hash, at: record.at, sig: record.sig };
    mkdirSync(dirname(this.file), { recursive: true });
    await appendFile(this.file, `${JSON.stringify(line)}\n`, { mode: 0o600, flag: 'a' });
  }

  /** This trail's checkpoints in file order; other trails' lines (other key prefixes) are skipped. */
  async read(): Promise<AnchorRead> {
    const checkpoints: Checkpoint[] = [];
    if (!existsSync(this.file)) return { ok: true, checkpoints };
    const lines = createInterface({ input: createReadStream(this.file, 'utf8'), crlfDelay: Infinity });
    let number = 0;
    for await (const line of lines) {
      number += 1;
      if (line === '') continue;
      const parsed = parse(line);
      if (!parsed) return { ok: false, reason: `line ${number} of the checkpoint file is not a checkpoint` };
      if (parsed.trail !== this.trail) continue;
      checkpoints.push({ seq: parsed.seq, hash: parsed.hash, sig: parsed.sig, source: `line ${number} of the checkpoint file` });
    }
    return { ok: true, checkpoints };
  }
}

function parse(line: string): { trail: string; seq: number; hash: string; sig: string } | null {
  if (line.length > MAX_LINE) return null;
  try {
    const { trail, seq, hash, sig } = JSON.parse(line) as Record<string, unknown>;
    if (typeof trail !== 'string' || typeof seq !== 'number' || !Number.isInteger(seq) || seq < 1) return null;
    if (typeof hash !== 'string' || typeof sig !== 'string') return null;
    return { trail, seq, hash, sig };
  } catch {
    return null;
  }
}
