/** Reading an upload: lines checked for OpenAI's batch line shape, grouped into segments, bounds held. */
import { describe, expect, it } from 'vitest';
import { linesOf, MAX_LINE_BYTES, SEGMENT_MAX_LINES, segmentLines } from '../../embedder/src/batch/jsonl.js';
import { parseJsonBody } from '../../embedder/src/http/json-body.js';
import type { ProblemError } from '../../openapi/problems.js';

const line = (id: string, input: unknown = 'text') =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: 'm', input } });

async function* chunksOf(text: string, size = 7): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function segments(text: string, limits = { maxBytes: 10_000_000, maxLines: 50_000 }) {
  const out = [];
  for await (const s of segmentLines(chunksOf(text), parseJsonBody, limits)) out.push(s);
  return out;
}

async function refusal(text: string, limits?: { maxBytes: number; maxLines: number }): Promise<ProblemError> {
  try {
    await segments(text, limits);
  } catch (error) {
    return error as ProblemError;
  }
  throw new Error('not refused');
}

describe('segmentLines', () => {
  it('keeps every line across chunk boundaries, skips blank lines and CRs, and cuts segments', async () => {
    const lines = Array.from({ length: SEGMENT_MAX_LINES + 5 }, (_, i) => line(`r${i}`));
    const got = await segments(`${lines.slice(0, 3).join('\r\n')}\n\n${lines.slice(3).join('\n')}`);
    expect(got.map((s) => s.lines)).toEqual([SEGMENT_MAX_LINES, 5]);
    const back = got.flatMap((s) => linesOf(s.raw).map((b) => b.toString()));
    expect(back).toEqual(lines);
  });

  it('refuses a malformed file with invalid_body naming the file and line, never its text', async () => {
    const cases: Array<[string, RegExp]> = [
      [`${line('a')}\nnot json CANARY`, /^file: line 2: must be one valid JSON value/],
      [`${line('a')}\n[1]`, /^file: line 2: must be a JSON object/],
      [JSON.stringify({ custom_id: 'a', method: 'GET', url: '/v1/embeddings', body: {} }), /line 1: method must be POST/],
      [JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: {} }), /url must be \/v1\/embeddings/],
      [JSON.stringify({ method: 'POST', url: '/v1/embeddings', body: {} }), /custom_id must be a string/],
      [`${line('same')}\n${line('same')}`, /line 2: custom_id must be unique/],
      ['\n\n', /must hold at least one request line/],
    ];
    for (const [text, detail] of cases) {
      const error = await refusal(text);
      expect(error.code).toBe('invalid_body');
      expect(error.detail).toMatch(detail);
      expect(error.detail).not.toContain('CANARY');
    }
  });

  it('refuses past the byte, line and per-line bounds', async () => {
    expect((await refusal(`${line('a')}\n${line('b')}`, { maxBytes: 10_000, maxLines: 1 })).code).toBe('payload_too_large');
    expect((await refusal(line('a').repeat(10), { maxBytes: 100, maxLines: 10 })).code).toBe('payload_too_large');
    const long = line('a', 'x'.repeat(MAX_LINE_BYTES));
    expect((await refusal(long)).detail).toMatch(/line 1: must be at most/);
  });
});
