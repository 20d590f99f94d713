/**
 * What the batch runner asks of whoever knows `/v1/embeddings`' rules (the HTTP layer,
 * http/batch-line.ts): run one line as the endpoint would, on the batch lane, with the line's
 * admission decided by the runner's settlement. The runner owns files, queue and settlement; the
 * executor owns the request's rules and its response body, so a line answers exactly what the
 * same request sent online would.
 */
import type { LineAdmission } from '../settlement/batch-store.js';

/** How one line ended. `body` is the JSON the endpoint would have answered (a problem on failure). */
export type LineResult =
  | { readonly kind: 'embedded'; readonly customId: string; readonly tokens: number; readonly body: string }
  | { readonly kind: 'failed'; readonly customId: string; readonly status: number; readonly code: string; readonly body: string }
  /** Not run: the batch stopped (cancelled, expired) or the line was settled by another worker. */
  | { readonly kind: 'not_run'; readonly customId: string };

export interface LineContext {
  readonly org: string;
  /** The model the batch's create request was granted ('' when none). */
  readonly model: string;
  /** Admits the line's tokens once it is tokenized, before any model work. */
  readonly admit: (tokens: number) => Promise<LineAdmission>;
}

/** Runs one line (its raw JSON bytes). Never throws for the line's own faults: they are results. */
export type LineExecutor = (raw: Buffer, context: LineContext) => Promise<LineResult>;
