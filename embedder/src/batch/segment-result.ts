/**
 * What running one segment produces, in OpenAI's line shapes: the output part (one line per
 * embedded request, `response.status_code` 200 and the endpoint's body) and the error part (one
 * line per failed request, its problem body, or `error` for a request that never ran). The
 * output part opens with the segment's ledger: each line's outcome and tokens, so a worker
 * that finds the part already written commits exactly what it says, and nothing is embedded
 * or billed twice. Line ids are derived from the batch and line, so a re-run writes the same ids.
 */
import { createHash } from 'node:crypto';
import type { LineOutcome } from '../settlement/batch-store.js';
import type { LineResult } from './line-executor.js';

/** The two parts of a segment's result and its ledger. */
export interface SegmentResult {
  readonly ledger: readonly LineOutcome[];
  /** The output part (ledger line first), and the error part (empty when no line failed). */
  readonly output: Buffer;
  readonly errors: Buffer;
}

/** `batch_req_` and 32 hex characters, the same for the same batch and line. */
function requestLineId(batch: string, line: number): string {
  return `batch_req_${createHash('sha256').update(`${batch}:${line}`).digest('hex').slice(0, 32)}`;
}

/** The request id a line's usage record and its output line carry. */
const lineRequestId = (batch: string, line: number): string => `${batch}:${line}`;

/** One error line for a request that never ran (expired before its turn). */
export function neverRanLine(batch: string, line: number, customId: string, code: string, message: string): string {
  return JSON.stringify({ id: requestLineId(batch, line), custom_id: customId, response: null, error: { code, message } });
}

function responseLine(batch: string, line: number, customId: string, status: number, body: string): string {
  const head = JSON.stringify({ id: requestLineId(batch, line), custom_id: customId }).slice(0, -1);
  const response = `{"status_code":${status},"request_id":${JSON.stringify(lineRequestId(batch, line))},"body":${body}}`;
  return `${head},"response":${response},"error":null}`;
}

/** Builds the parts from the results of lines `first`, `first + 1`, … of `batch`. */
export function segmentResult(batch: string, first: number, results: readonly LineResult[]): SegmentResult {
  const ledger: LineOutcome[] = [];
  const out: string[] = [];
  const err: string[] = [];
  results.forEach((result, i) => {
    const line = first + i;
    if (result.kind === 'embedded') {
      ledger.push({ line, kind: 'embedded', tokens: result.tokens });
      out.push(responseLine(batch, line, result.customId, 200, result.body));
    } else if (result.kind === 'failed') {
      ledger.push({ line, kind: 'failed', code: result.code });
      err.push(responseLine(batch, line, result.customId, result.status, result.body));
    }
  });
  const ledgerLine = JSON.stringify(ledger.map((o) => (o.kind === 'embedded' ? [o.line, 'u', o.tokens] : [o.line, 'f', o.code])));
  return {
    ledger,
    output: Buffer.from([ledgerLine, ...out].map((l) => `${l}\n`).join(''), 'utf8'),
    errors: Buffer.from(err.map((l) => `${l}\n`).join(''), 'utf8'),
  };
}

/** The ledger of an output part (its first line). */
export function ledgerOf(output: Buffer): LineOutcome[] {
  const first = output.subarray(0, output.indexOf(0x0a)).toString('utf8');
  const rows = JSON.parse(first) as Array<[number, 'u' | 'f', number | string]>;
  return rows.map(([line, kind, value]) =>
    kind === 'u' ? { line, kind: 'embedded', tokens: Number(value) } : { line, kind: 'failed', code: String(value) },
  );
}

/** Bytes of an output part's content (without its ledger line). */
export const contentBytes = (output: Buffer): number => output.length - (output.indexOf(0x0a) + 1);
