/**
 * Reading an uploaded batch file as it streams in: split into lines, each line checked for the
 * shape OpenAI's Batch API requires ({custom_id, method: "POST", url: "/v1/embeddings", body}),
 * custom_ids unique, bounds held, and the lines grouped into segments: the unit a worker claims
 * and the unit sealed and stored. The body's own rules (model, input, tokens) are the online
 * endpoint's and run per line when the batch runs; a bad body fails only its line. A malformed
 * file is refused here with `invalid_body` naming `file` and the line number, never its text.
 */
import { createHash } from 'node:crypto';
import { ProblemError } from '../../../openapi/problems.js';

/** How one line's bytes become a value (the gateway's strict JSON parser); throws on bad JSON. */
export type LineParser = (raw: Buffer) => unknown;

export interface FileLimits {
  readonly maxBytes: number;
  readonly maxLines: number;
}

/** One line as stored: at most the online body limit, like the request it stands for. */
export const MAX_LINE_BYTES = 1_048_576;
/** custom_id: a client's reference, bounded so the uniqueness check stays bounded too. */
const MAX_CUSTOM_ID = 512;
/** A segment: what one worker embeds before it commits. Small enough to re-run cheaply after a crash. */
export const SEGMENT_MAX_LINES = 64;
// A segment's result is held, sealed and written whole: 256 float vectors are about 5 MB of JSON.
const SEGMENT_MAX_INPUTS = 256;
const SEGMENT_MAX_BYTES = 4 * MAX_LINE_BYTES;

/** A segment's raw lines (each ending in a newline) and how many requests it holds. */
export interface Segment {
  readonly raw: Buffer;
  readonly lines: number;
}

const refuse = (detail: string): ProblemError => new ProblemError('invalid_body', `file: ${detail}`);

/** What a valid line is; the body's own rules are checked when the line runs. */
function inputsOf(value: unknown, lineNo: number): { customId: string; inputs: number } {
  const at = `line ${lineNo}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw refuse(`${at}: must be a JSON object`);
  const line = value as Record<string, unknown>;
  if (typeof line.custom_id !== 'string' || line.custom_id.length === 0 || line.custom_id.length > MAX_CUSTOM_ID) {
    throw refuse(`${at}: custom_id must be a string of 1 to ${MAX_CUSTOM_ID} characters`);
  }
  if (line.method !== 'POST') throw refuse(`${at}: method must be POST`);
  if (line.url !== '/v1/embeddings') throw refuse(`${at}: url must be /v1/embeddings`);
  if (typeof line.body !== 'object' || line.body === null || Array.isArray(line.body)) throw refuse(`${at}: body must be a JSON object`);
  const input = (line.body as Record<string, unknown>).input;
  return { customId: line.custom_id, inputs: Array.isArray(input) ? Math.max(1, input.length) : 1 };
}

/**
 * Reads `chunks` (the file part of the upload) and yields segments as they fill. Throws
 * ProblemError: `invalid_body` for a malformed file, `payload_too_large` past the bounds.
 */
export async function* segmentLines(chunks: AsyncIterable<Buffer>, parse: LineParser, limits: FileLimits): AsyncGenerator<Segment> {
  const seen = new Set<string>();
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNo = 0;
  let current: Buffer[] = [];
  let currentLines = 0;
  let currentInputs = 0;
  let currentBytes = 0;
  let total = 0;

  const cut = (): Segment => {
    const segment = { raw: Buffer.concat(current), lines: currentLines };
    current = [];
    currentLines = 0;
    currentInputs = 0;
    currentBytes = 0;
    return segment;
  };
  // One complete line (without its newline); returns a full segment to yield, if any.
  const take = (line: Buffer): Segment | undefined => {
    lineNo += 1;
    const text = line.at(-1) === 0x0d ? line.subarray(0, -1) : line;
    if (text.toString('latin1').trim() === '') return undefined;
    let value: unknown;
    try {
      value = parse(text);
    } catch {
      throw refuse(`line ${lineNo}: must be one valid JSON value in UTF-8`);
    }
    const { customId, inputs } = inputsOf(value, lineNo);
    const digest = createHash('sha256').update(customId).digest('base64');
    if (seen.has(digest)) throw refuse(`line ${lineNo}: custom_id must be unique within the file`);
    seen.add(digest);
    if (seen.size > limits.maxLines) throw new ProblemError('payload_too_large', `file: must hold at most ${limits.maxLines} requests`);
    let full: Segment | undefined;
    if (
      currentLines > 0 &&
      (currentLines >= SEGMENT_MAX_LINES ||
        currentInputs + inputs > SEGMENT_MAX_INPUTS ||
        currentBytes + text.length + 1 > SEGMENT_MAX_BYTES)
    ) {
      full = cut();
    }
    current.push(text, Buffer.from('\n'));
    currentLines += 1;
    currentInputs += inputs;
    currentBytes += text.length + 1;
    return full;
  };

  for await (const chunk of chunks) {
    total += chunk.length;
    if (total > limits.maxBytes) throw new ProblemError('payload_too_large', `file: must be at most ${limits.maxBytes} bytes`);
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      const line = pendingBytes > 0 ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      pendingBytes = 0;
      start = nl + 1;
      if (line.length > MAX_LINE_BYTES) throw refuse(`line ${lineNo + 1}: must be at most ${MAX_LINE_BYTES} bytes`);
      const full = take(line);
      if (full) yield full;
    }
    const rest = chunk.subarray(start);
    pendingBytes += rest.length;
    if (pendingBytes > MAX_LINE_BYTES) throw refuse(`line ${lineNo + 1}: must be at most ${MAX_LINE_BYTES} bytes`);
    if (rest.length > 0) pending.push(Buffer.from(rest));
  }
  if (pendingBytes > 0) {
    const full = take(Buffer.concat(pending));
    if (full) yield full;
  }
  if (currentLines > 0) yield cut();
  if (seen.size === 0) throw refuse('must hold at least one request line');
}

/** Splits a stored segment back into its lines (raw bytes, without newlines). */
export function linesOf(raw: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (let nl = raw.indexOf(0x0a); nl !== -1; nl = raw.indexOf(0x0a, start)) {
    lines.push(raw.subarray(start, nl));
    start = nl + 1;
  }
  return lines;
}
