/**
 * The Batch API's side of Redis: the functions of contract/redis/batch.lua, called by name as
 * the embedder's restricted user. Two faces: `BatchSettlement`, each line admitted and its
 * usage recorded exactly once (the interface the settlement v2 functions will implement), and
 * `BatchQueue`, the durable queue of segment references every replica claims work from, with
 * the batch records' lifecycle. Commands are bounded like the settlement's; faults throw
 * SettlementUnavailableError, refusals are values.
 *
 * It names no key: each call declares a routing key, the organization's (batchRouteKey) or the
 * global work index's (batchIndexRouteKey), and the functions derive the rest under the secret
 * namespace. No call spans an organization and the index, so on a Redis Cluster each runs on one
 * primary; the order of the calls below is the protocol docs/batch.md ("Shared state") argues.
 */
import type { Redis } from 'ioredis';
import type { GrantClaims } from '../../../contract/grant.js';
import { openRedis, type RedisTarget } from '../../../contract/redis-target.js';
import { batchFunctionNames, batchIndexRouteKey, batchRouteKey } from '../../../contract/redis/batch-keys.js';
import { SettlementUnavailableError } from './store.js';

/** A batch as Redis keeps it: identifiers, times (ms), counts; never text. */
export interface BatchRecord {
  readonly id: string;
  readonly org: string;
  readonly key: string;
  readonly model: string;
  readonly inputFileId: string;
  readonly status: BatchStatus;
  readonly segments: number;
  /** Segments committed or skipped: the batch's work is over when it reaches `segments`. */
  readonly segmentsDone: number;
  readonly total: number;
  readonly completed: number;
  readonly failed: number;
  readonly times: Readonly<Partial<Record<BatchTime, number>>>;
  readonly outputFileId: string;
  readonly errorFileId: string;
  /** Wrapped data keys of the output and error files. */
  readonly dataKeys: { readonly output: string; readonly error: string };
  readonly error: string;
}

type BatchStatus = 'validating' | 'in_progress' | 'finalizing' | 'completed' | 'failed' | 'cancelling' | 'cancelled' | 'expired';
type BatchTime =
  | 'created_at'
  | 'in_progress_at'
  | 'expires_at'
  | 'finalizing_at'
  | 'completed_at'
  | 'failed_at'
  | 'expired_at'
  | 'cancelling_at'
  | 'cancelled_at';
const TIMES: readonly BatchTime[] = [
  'created_at',
  'in_progress_at',
  'expires_at',
  'finalizing_at',
  'completed_at',
  'failed_at',
  'expired_at',
  'cancelling_at',
  'cancelled_at',
];

/** What a new batch is: its id, input, size and the wrapped keys of its output files. */
interface NewBatch {
  readonly id: string;
  readonly inputFileId: string;
  readonly segments: number;
  readonly lines: number;
  readonly windowMs: number;
  readonly dataKeys: { readonly output: string; readonly error: string };
}

type OpenReply = { readonly kind: 'opened' | 'reopened'; readonly batchId: string } | { readonly kind: 'expired' | 'used' };

/** One line's admission: run it, or why not. */
export type LineAdmission = 'admitted' | 'recorded' | 'failed' | 'stopped' | 'model_not_enabled' | 'over_budget';
const ADMISSIONS: readonly LineAdmission[] = ['admitted', 'recorded', 'failed', 'stopped', 'model_not_enabled', 'over_budget'];

/** How a line ended: embedded (its tokens) or failed (a catalogue code). */
export type LineOutcome =
  | { readonly line: number; readonly kind: 'embedded'; readonly tokens: number }
  | { readonly line: number; readonly kind: 'failed'; readonly code: string };

/** A claimed queue entry: run a segment, or finalize a batch whose work is over. */
export interface SegmentTask {
  readonly org: string;
  readonly batch: string;
  readonly segment: number;
  readonly entryId: string;
  readonly task: 'run' | 'finalize';
}

/** Per line, exactly once: what the settlement v2 functions implement (DESIGN-settlement-v2). */
export interface BatchSettlement {
  /** Turns the create request's grant into the batch record (single use; the same grant reopens). */
  open(grant: GrantClaims, batch: NewBatch): Promise<OpenReply>;
  /** Admits lines with their token counts (model access and hard-stop budget checked now). */
  admit(org: string, batch: string, lines: ReadonlyArray<{ line: number; tokens: number }>, now: number): Promise<LineAdmission[]>;
  /** Records a segment's lines (usage kind `batch`) and acknowledges it, once; `ended` when it was the batch's last. */
  record(task: SegmentTask, outcomes: readonly LineOutcome[], now: number): Promise<{ recorded: number; failed: number; ended: boolean }>;
  /** Ends a batch whose work is over; admitted lines never recorded are refunded. */
  finish(org: string, batch: string, files: { output: string; error: string }, keepMs: number): Promise<string>;
  get(org: string, batch: string): Promise<BatchRecord | null>;
}

/** The durable queue and the batch lifecycle around it. */
export interface BatchQueue {
  claim(consumer: string, leaseMs: number): Promise<SegmentTask | null>;
  heartbeat(task: SegmentTask, consumer: string): Promise<boolean>;
  cancel(org: string, batch: string): Promise<string>;
  expire(org: string, batch: string): Promise<string>;
  fail(org: string, batch: string, code: string): Promise<string>;
  /** The organization's batches, newest first, created before `before` (ms). */
  list(org: string, before: number | null, limit: number): Promise<Array<{ id: string; createdAt: number }>>;
  /** Batches not yet ended, soonest expiry first. */
  unfinished(limit: number): Promise<Array<{ org: string; batch: string; expiresAt: number }>>;
}

export interface BatchStoreOptions extends RedisTarget {
  readonly prefix: string;
  readonly timeoutMs: number;
}

function decodeRecord(flat: readonly string[]): BatchRecord | null {
  if (flat.length === 0) return null;
  const h: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) h[flat[i]!] = flat[i + 1]!;
  const times: Partial<Record<BatchTime, number>> = {};
  for (const t of TIMES) if (h[t]) times[t] = Number(h[t]);
  return {
    id: h.id ?? '',
    org: h.org ?? '',
    key: h.key ?? '',
    model: h.model ?? '',
    inputFileId: h.input_file_id ?? '',
    status: (h.status ?? 'failed') as BatchStatus,
    segments: Number(h.segments ?? 0),
    segmentsDone: Number(h.segments_done ?? 0),
    total: Number(h.total ?? 0),
    completed: Number(h.completed ?? 0),
    failed: Number(h.failed ?? 0),
    times,
    outputFileId: h.output_file_id ?? '',
    errorFileId: h.error_file_id ?? '',
    dataKeys: { output: h.dek_out ?? '', error: h.dek_err ?? '' },
    error: h.error ?? '',
  };
}

/** How many times an open enlists again when a sweeper sealed the organization meanwhile (rare: it needs a sweep in between). */
const OPEN_TRIES = 5;
/** Organizations the claim looks at per call, least served first. */
const CANDIDATES = 16;

/** Opens the batch store on its own connection; it reconnects by itself. */
export function openBatchStore(options: BatchStoreOptions): BatchSettlement & BatchQueue & { close(): void } {
  const fn = batchFunctionNames(options.prefix).fn;
  const route = (org: string) => batchRouteKey(options.prefix, org);
  const index = batchIndexRouteKey(options.prefix);
  const redis: Redis = openRedis(options, {
    commandTimeout: options.timeoutMs,
    connectTimeout: Math.max(1000, options.timeoutMs),
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  redis.on('error', () => undefined);
  const call = async (command: 'FCALL' | 'FCALL_RO', name: string, key: string, args: Array<string | number>): Promise<unknown> => {
    try {
      return await redis.call(command, name, 1, key, ...args);
    } catch (error) {
      throw new SettlementUnavailableError(error);
    }
  };
  /** Flat (org, …, version) rows of an index reply, `width` values before the version. */
  const rows = (flat: readonly string[], width: number) => {
    const out: string[][] = [];
    for (let i = 0; i + width < flat.length; i += width + 1) out.push(flat.slice(i, i + width + 1));
    return out;
  };

  return {
    async open(grant, batch) {
      // The organization joins the index first (a crash after it leaves only an entry a sweep
      // retires); the organization, key and model are the grant record's (authz wrote it at Check).
      for (let attempt = 0; attempt < OPEN_TRIES; attempt += 1) {
        const version = Number(await call('FCALL', fn.enlist, index, [grant.org, Date.now() + batch.windowMs]));
        const reply = (await call('FCALL', fn.open, route(grant.org), [
          grant.uid,
          batch.id,
          batch.inputFileId,
          batch.segments,
          batch.lines,
          batch.windowMs,
          batch.dataKeys.output,
          batch.dataKeys.error,
          version,
        ])) as [number, string];
        if (Number(reply[0]) === 4) continue;
        const kind = (['opened', 'reopened', 'expired', 'used'] as const)[Number(reply[0])] ?? 'used';
        return kind === 'opened' || kind === 'reopened' ? { kind, batchId: reply[1] } : { kind };
      }
      throw new SettlementUnavailableError(new Error('the batch index kept changing while the batch was opened'));
    },
    async admit(org, batch, lines) {
      const reply = (await call('FCALL', fn.admit, route(org), [batch, ...lines.flatMap((l) => [l.line, l.tokens])])) as number[];
      return reply.map((code) => ADMISSIONS[Number(code)] ?? 'stopped');
    },
    async record(task, outcomes) {
      const args = outcomes.flatMap((o) => (o.kind === 'embedded' ? [o.line, 'u', o.tokens] : [o.line, 'f', o.code]));
      const reply = (await call('FCALL', fn.commit, route(task.org), [task.batch, task.segment, task.entryId, ...args])) as number[];
      return { recorded: Number(reply[0]), failed: Number(reply[1]), ended: Number(reply[2]) === 1 };
    },
    async finish(org, batch, files, keepMs) {
      return String(await call('FCALL', fn.finish, route(org), [batch, files.output, files.error, keepMs]));
    },
    async get(org, batch) {
      return decodeRecord((await call('FCALL_RO', fn.get, route(org), [batch])) as string[]);
    },
    async claim(consumer, leaseMs) {
      // Candidates from the index, then a claim in each organization's own slot; an organization
      // found idle is retired only if no enlist came since its version was read.
      const candidates = rows((await call('FCALL_RO', fn.candidates, index, [CANDIDATES])) as string[], 1);
      for (const [org, version] of candidates as Array<[string, string]>) {
        const reply = (await call('FCALL', fn.take, route(org), [consumer, leaseMs, version])) as string[];
        if (reply[0] === 'idle') {
          await call('FCALL', fn.retire, index, [org, version, 'active']);
          continue;
        }
        if (reply.length < 4) continue;
        const [batch, segment, entryId, task] = reply as [string, string, string, 'run' | 'finalize'];
        if (task === 'run') await call('FCALL', fn.served, index, [org]);
        return { org, batch, segment: Number(segment), entryId, task };
      }
      return null;
    },
    async heartbeat(task, consumer) {
      return Number(await call('FCALL', fn.heartbeat, route(task.org), [consumer, task.entryId])) > 0;
    },
    cancel: async (org, batch) => String(await call('FCALL', fn.cancel, route(org), [batch])),
    expire: async (org, batch) => String(await call('FCALL', fn.expire, route(org), [batch])),
    fail: async (org, batch, code) => String(await call('FCALL', fn.fail, route(org), [batch, code])),
    async list(org, before, limit) {
      const flat = (await call('FCALL_RO', fn.list, route(org), [before === null ? '+inf' : before, limit])) as string[];
      const out: Array<{ id: string; createdAt: number }> = [];
      for (let i = 0; i + 1 < flat.length; i += 2) out.push({ id: flat[i]!, createdAt: Number(flat[i + 1]) });
      return out;
    },
    async unfinished(limit) {
      // Organizations soonest to expire first, then each one's batches in its own slot; one with
      // none left is retired from the open index (compare-and-delete, as the claim's), one with
      // some is rescheduled at its soonest expiry.
      const out: Array<{ org: string; batch: string; expiresAt: number }> = [];
      const orgs = rows((await call('FCALL_RO', fn.expiring, index, [limit])) as string[], 2);
      for (const [org, , version] of orgs as Array<[string, string, string]>) {
        if (out.length >= limit) break;
        const flat = (await call('FCALL', fn.unfinished, route(org), [limit - out.length, version])) as string[];
        if (flat.length === 0) {
          await call('FCALL', fn.retire, index, [org, version, 'open']);
          continue;
        }
        await call('FCALL', fn.reschedule, index, [org, flat[1]!]);
        for (let i = 0; i + 1 < flat.length; i += 2) out.push({ org, batch: flat[i]!, expiresAt: Number(flat[i + 1]) });
      }
      return out.sort((a, b) => a.expiresAt - b.expiresAt);
    },
    close: () => redis.disconnect(),
  };
}
