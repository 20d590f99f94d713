/**
 * Checkpoints of the audit chain kept outside Redis: after every append, one line
 * `{"trail","seq","hash","at","mac"}` is appended to AUDIT_ANCHOR_FILE, signed (HMAC) with a key
 * derived from the audit secret. `audit verify` checks the chain against every checkpoint of its
 * trail, so restoring an older copy of Redis, or cutting the trail short and re-pointing its
 * head, is detected even by someone who can write all of Redis. The file is append-only by use
 * (O_APPEND writes of one short line each, so processes sharing it never interleave); keep it
 * on storage Redis's operators cannot rewrite (a separate volume, `chattr +a`, an object lock).
 */
import { createReadStream, existsSync, mkdirSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { createHmac } from 'node:crypto';
import { sameDigest, type Anchors, type ChainHead } from './chain.js';

/** A checkpoint line longer than this is not ours (bounds what verify reads per line). */
const MAX_LINE = 1024;

interface Checkpoint {
  readonly trail: string;
  readonly seq: number;
  readonly hash: string;
  readonly at: string;
}

/** Anchors read back, or the first line that is not a checkpoint signed with the audit secret. */
export type AnchorRead =
  | { readonly ok: true; readonly anchors: Anchors }
  | { readonly ok: false; readonly line: number; readonly brokenAt: number; readonly reason: string };

function macOf(checkpoint: Checkpoint, key: Buffer): string {
  return createHmac('sha256', key)
    .update(JSON.stringify([checkpoint.trail, checkpoint.seq, checkpoint.hash, checkpoint.at]))
    .digest('hex');
}

export class AuditAnchor {
  /**
   * @param file the checkpoint file (created on the first append, mode 600)
   * @param trail which trail this is (the Redis key prefix), so trails may share one file
   * @param key the checkpoint key (auditKeys(secret).checkpoint)
   */
  constructor(
    private readonly file: string,
    private readonly trail: string,
    private readonly key: Buffer,
    private readonly now: () => number,
  ) {}

  /** Appends a signed checkpoint of `head`. */
  async checkpoint(head: ChainHead): Promise<void> {
    const checkpoint: Checkpoint = { trail: this.trail, seq: head.seq, hash: head.hash, at: new Date(this.now()).toISOString() };
    mkdirSync(dirname(this.file), { recursive: true });
    await appendFile(this.file, `${JSON.stringify({ ...checkpoint, mac: macOf(checkpoint, this.key) })}\n`, { mode: 0o600, flag: 'a' });
  }

  /** This trail's checkpoints; a line that is unreadable or wrongly signed fails the read. */
  async read(): Promise<AnchorRead> {
    const bySeq = new Map<number, string>();
    let latest = 0;
    if (!existsSync(this.file)) return { ok: true, anchors: { bySeq, latest } };
    const lines = createInterface({ input: createReadStream(this.file, 'utf8'), crlfDelay: Infinity });
    let number = 0;
    for await (const line of lines) {
      number += 1;
      if (line === '') continue;
      const parsed = parse(line);
      if (!parsed) return { ok: false, line: number, brokenAt: 0, reason: `line ${number} of the checkpoint file is not a checkpoint` };
      // Other trails (other key prefixes, perhaps other secrets) may share the file; a line
      // moved to another trail by editing it would no longer verify, so only ours are checked.
      if (parsed.trail !== this.trail) continue;
      if (!sameDigest(macOf(parsed, this.key), parsed.mac))
        return {
          ok: false,
          line: number,
          brokenAt: 0,
          reason: `line ${number} of the checkpoint file is not signed with the audit secret`,
        };
      const earlier = bySeq.get(parsed.seq);
      // Two signed checkpoints that disagree on one seq mean the chain was replaced in between.
      if (earlier !== undefined && earlier !== parsed.hash)
        return {
          ok: false,
          line: number,
          brokenAt: parsed.seq,
          reason: `line ${number} checkpoints record ${parsed.seq} with a different hash than an earlier line: the trail was replaced`,
        };
      bySeq.set(parsed.seq, parsed.hash);
      latest = Math.max(latest, parsed.seq);
    }
    return { ok: true, anchors: { bySeq, latest } };
  }
}

function parse(line: string): (Checkpoint & { mac: string }) | null {
  if (line.length > MAX_LINE) return null;
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    const { trail, seq, hash, at, mac } = value;
    if (typeof trail !== 'string' || typeof seq !== 'number' || !Number.isInteger(seq) || seq < 1) return null;
    if (typeof hash !== 'string' || typeof at !== 'string' || typeof mac !== 'string') return null;
    return { trail, seq, hash, at, mac };
  } catch {
    return null;
  }
}
