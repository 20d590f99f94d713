/**
 * The Batches API's logic: create (from the organization's uploaded file, with the create
 * request's grant consumed once), retrieve, list and cancel, and OpenAI's batch object. Only
 * `/v1/embeddings` and a 24-hour window are offered. Every lookup is scoped to the caller's
 * organization; another organization's batch id is not found.
 */
import { randomBytes } from 'node:crypto';
import type { GrantClaims } from '../../../contract/grant.js';
import { ProblemError } from '../../../openapi/problems.js';
import type { BatchQueue, BatchRecord, BatchSettlement } from '../settlement/batch-store.js';
import { BATCH_ID } from './file-store.js';
import type { BatchFiles } from './files.js';
import { outputDataKeys } from './finalize.js';
import type { KeyRing } from './sealing.js';

/** The completion window OpenAI offers, and the only one here. */
const WINDOW_MS = 24 * 3_600_000;
const NOT_FOUND = 'No such batch for this organization.';

/** What POST /v1/batches takes (after the schema). */
export interface CreateBatchBody {
  readonly input_file_id: string;
  readonly endpoint: string;
  readonly completion_window: string;
}

const seconds = (ms: number | undefined): number | null => (ms === undefined ? null : Math.floor(ms / 1000));

/** OpenAI's batch object for a record. */
export function batchView(record: BatchRecord) {
  const t = record.times;
  return {
    id: record.id,
    object: 'batch' as const,
    endpoint: '/v1/embeddings',
    model: record.model || null,
    errors: record.error
      ? { object: 'list', data: [{ code: record.error, message: 'The batch could not read its input file.', param: null, line: null }] }
      : null,
    input_file_id: record.inputFileId,
    completion_window: '24h',
    status: record.status,
    output_file_id: record.outputFileId || null,
    error_file_id: record.errorFileId || null,
    created_at: seconds(t.created_at),
    in_progress_at: seconds(t.in_progress_at),
    expires_at: seconds(t.expires_at),
    finalizing_at: seconds(t.finalizing_at),
    completed_at: seconds(t.completed_at),
    failed_at: seconds(t.failed_at),
    expired_at: seconds(t.expired_at),
    cancelling_at: seconds(t.cancelling_at),
    cancelled_at: seconds(t.cancelled_at),
    request_counts: { total: record.total, completed: record.completed, failed: record.failed },
    metadata: null,
  };
}

/** The Batches API over the queue and the files. */
export class Batches {
  constructor(
    private readonly queue: BatchSettlement & BatchQueue,
    private readonly files: BatchFiles,
    private readonly ring: KeyRing,
  ) {}

  /** Creates a batch; the same grant again (a retried request) answers the batch it created. */
  async create(grant: GrantClaims, body: CreateBatchBody): Promise<BatchRecord> {
    if (body.endpoint !== '/v1/embeddings') throw new ProblemError('invalid_body', 'endpoint: must be /v1/embeddings');
    if (body.completion_window !== '24h') throw new ProblemError('invalid_body', 'completion_window: must be 24h');
    // Another organization's file is as unknown as one that never existed.
    const input = await this.files.get(grant.org, body.input_file_id);
    if (input.purpose !== 'batch') throw new ProblemError('invalid_body', 'input_file_id: must name a file uploaded with purpose batch');
    const id = `batch_${randomBytes(12).toString('hex')}`;
    const opened = await this.queue.open(grant, {
      id,
      inputFileId: input.id,
      segments: input.parts,
      lines: input.lines.reduce((a, b) => a + b, 0),
      windowMs: WINDOW_MS,
      dataKeys: outputDataKeys(this.ring, id),
    });
    // The input outlives the batch's window: the retention sweep must not take it mid-run.
    await this.files.keepFor(input, Date.now() + WINDOW_MS);
    if (!('batchId' in opened)) {
      throw new ProblemError('authorization_unavailable', 'The authorization of this request was already used or expired; retry.', {
        'retry-after': '1',
      });
    }
    return this.get(grant.org, opened.batchId);
  }

  /** The organization's batch, or a 404 problem. */
  async get(org: string, id: string): Promise<BatchRecord> {
    const record = BATCH_ID.test(id) ? await this.queue.get(org, id) : null;
    if (!record) throw new ProblemError('not_found', NOT_FOUND);
    return record;
  }

  /** Newest first, after the batch `after`. */
  async list(org: string, options: { after?: string; limit: number }): Promise<{ batches: BatchRecord[]; hasMore: boolean }> {
    let before: number | null = null;
    if (options.after) {
      const after = BATCH_ID.test(options.after) ? await this.queue.get(org, options.after) : null;
      // An unknown cursor is past the end: an empty page, as for files.
      if (!after) return { batches: [], hasMore: false };
      before = after.times.created_at ?? 0;
    }
    const ids = await this.queue.list(org, before, options.limit + 1);
    const records = await Promise.all(ids.slice(0, options.limit).map((entry) => this.queue.get(org, entry.id)));
    return { batches: records.filter((r): r is BatchRecord => r !== null), hasMore: ids.length > options.limit };
  }

  /** Asks the batch to stop; lines not yet run are never run or billed. */
  async cancel(org: string, id: string): Promise<BatchRecord> {
    await this.get(org, id);
    await this.queue.cancel(org, id);
    return this.get(org, id);
  }
}
