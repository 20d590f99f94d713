/**
 * POST /v1/embeddings through the real Envoy over HTTPS, with the real authz, Redis and the
 * default model: the success shape and headers, every body rule, and the size limits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_CONTENT_TYPE, PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { startStack, type Stack } from '../support/stack.js';
import type { GatewayResponse } from '../support/stack-client.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MIB = 1024 * 1024;
const LONG_TEXT = 'The patient reports intermittent chest pain radiating to the left arm. '.repeat(60);

let stack: Stack;
let key: CreatedKey;

beforeAll(async () => {
  stack = await startStack();
  key = orgWithKey(stack, 'embed');
});

afterAll(async () => {
  await stack?.stop();
});

function post(body: unknown, options: { headers?: Record<string, string>; http2?: boolean; raw?: string | Buffer } = {}) {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    http2: options.http2,
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...options.headers },
    body: options.raw ?? JSON.stringify(body),
  });
}

const request = (extra: Record<string, unknown> = {}) => ({ model: stack.svc.modelId, input: 'Patient denies chest pain.', ...extra });

function expectProblem(res: GatewayResponse, status: number, code: string, detailMatch?: RegExp) {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  const body = res.json();
  expect(body).toMatchObject({ status, code });
  if (detailMatch) expect(body.detail).toMatch(detailMatch);
}

function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  expect(bytes.length).toBe(4096);
  return Array.from({ length: 1024 }, (_, i) => bytes.readFloatLE(i * 4));
}

const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

describe.each([false, true])('a successful request (http2: %s)', (http2) => {
  it('is 200 with the JSON content type, one unit 1024-d vector, usage and the x-* headers', async () => {
    const res = await post(request(), { http2, headers: { 'x-request-id': `ok-${http2}` } });
    expect(res.status, res.body).toBe(200);
    expect(res.protocol).toBe(http2 ? 'h2' : 'http/1.1');
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.headers['x-request-id']).toBe(`ok-${http2}`);
    const body = res.json();
    expect(body).toMatchObject({ object: 'list', model: stack.svc.modelId, id: expect.stringMatching(/^embd-[0-9a-f]{32}$/) });
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    expect(body.data[0].embedding).toHaveLength(1024);
    expect(dot(body.data[0].embedding, body.data[0].embedding)).toBeCloseTo(1, 4);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens);
    expect(body.usage.prompt_tokens).toBeGreaterThan(2);
    expect(res.headers['x-usage-total-tokens']).toBe(String(body.usage.total_tokens));
    for (const h of [
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-ratelimit-limit-tokens',
      'x-ratelimit-remaining-tokens',
    ]) {
      expect(res.headers[h], h).toMatch(/^\d+$/);
    }
  });

  it('generates a UUID x-request-id when none is sent', async () => {
    const res = await post(request(), { http2 });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toMatch(UUID);
  });
});

describe('encodings and input types', () => {
  it('base64 decodes to the same vector as float', async () => {
    const float = (await post(request({ encoding_format: 'float' }))).json().data[0].embedding as number[];
    const b64 = (await post(request({ encoding_format: 'base64' }))).json().data[0].embedding as string;
    expect(typeof b64).toBe('string');
    const decoded = decodeBase64(b64);
    for (const [i, x] of decoded.entries()) expect(x).toBeCloseTo(float[i]!, 6);
  });

  it('query differs from no input_type; document equals it', async () => {
    const vector = async (extra: Record<string, unknown>) => (await post(request(extra))).json().data[0].embedding as number[];
    const plain = await vector({});
    const document = await vector({ input_type: 'document' });
    const query = await vector({ input_type: 'query' });
    for (const [i, x] of document.entries()) expect(x).toBeCloseTo(plain[i]!, 5);
    expect(dot(query, plain)).toBeLessThan(0.999);
    const queryUsage = (await post(request({ input_type: 'query' }))).json().usage.prompt_tokens;
    const plainUsage = (await post(request())).json().usage.prompt_tokens;
    expect(queryUsage).toBeGreaterThan(plainUsage);
  });

  it('an input over 512 tokens is 400 invalid_request naming the maximum context length; -1 truncates to 512', async () => {
    expectProblem(await post(request({ input: LONG_TEXT })), 400, 'invalid_request', /maximum context length/i);
    const truncated = await post(request({ input: [LONG_TEXT, 'short'], truncate_prompt_tokens: -1 }));
    expect(truncated.status, truncated.body).toBe(200);
    const body = truncated.json();
    expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1]);
    const shortTokens = (await post(request({ input: 'short' }))).json().usage.prompt_tokens;
    expect(body.usage.prompt_tokens).toBe(512 + shortTokens);
  });

  it('dimensions is 400 invalid_request', async () => {
    expectProblem(await post(request({ dimensions: 1024 })), 400, 'invalid_request', /dimensions/);
  });

  it('1,000 inputs give 1,000 items in input order; 1,001 is 400 invalid_body naming input', async () => {
    const inputs = Array.from({ length: 1000 }, (_, i) => `note ${i}: afebrile, vitals stable`);
    const res = await post(request({ input: inputs }));
    expect(res.status, res.body.slice(0, 300)).toBe(200);
    const data = res.json().data as Array<{ index: number }>;
    expect(data).toHaveLength(1000);
    expect(data.every((d, i) => d.index === i)).toBe(true);
    expectProblem(await post(request({ input: [...inputs, 'one more'] })), 400, 'invalid_body', /input/);
  }, 180_000);

  it('unknown fields are dropped and user is accepted', async () => {
    const res = await post(request({ user: 'u-1', something_else: { nested: true } }));
    expect(res.status, res.body).toBe(200);
  });
});

describe('400 invalid_body, each field named in detail', () => {
  type Edit = (body: Record<string, unknown>) => Record<string, unknown>;
  const without =
    (field: string): Edit =>
    (body) =>
      Object.fromEntries(Object.entries(body).filter(([k]) => k !== field));
  const withField =
    (field: string, value: unknown): Edit =>
    (body) => ({ ...body, [field]: value });
  it.each<[string, Edit, RegExp]>([
    ['model missing', without('model'), /model/],
    ['input missing', without('input'), /input/],
    ['input an empty string', withField('input', ''), /input/],
    ['input an empty array', withField('input', []), /input/],
    ['input holding a number', withField('input', ['ok', 3]), /input/],
    ['input_type unknown', withField('input_type', 'passage'), /input_type/],
    ['encoding_format unknown', withField('encoding_format', 'int8'), /encoding_format/],
  ])('%s', async (_name, edit, detail) => {
    const res = await post(edit(request()));
    expectProblem(res, 400, 'invalid_body', detail);
    // The request reached the rate-limit check in authz before the embedder refused it.
    expect(res.headers['x-ratelimit-limit']).toMatch(/^\d+$/);
  });

  it('a Content-Type without json is 400 invalid_body naming the content type', async () => {
    const res = await post(undefined, { raw: JSON.stringify(request()), headers: { 'content-type': 'text/plain' } });
    expectProblem(res, 400, 'invalid_body', /content-type/i);
  });

  it('a body that is not JSON is 400 invalid_body', async () => {
    expectProblem(await post(undefined, { raw: '{"model": ' }), 400, 'invalid_body');
  });
});

describe('body size', () => {
  it('1 MiB + 1 byte is 413 payload_too_large, over HTTP/1.1 and HTTP/2', async () => {
    for (const http2 of [false, true]) {
      const res = await post(undefined, { http2, raw: Buffer.alloc(MIB + 1, 0x20) });
      expectProblem(res, 413, 'payload_too_large');
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('a valid body of exactly 1 MiB is served', async () => {
    const head = JSON.stringify(request({ user: '' }));
    const body = head.replace('"user":""', `"user":"${'u'.repeat(MIB - head.length)}"`);
    expect(Buffer.byteLength(body)).toBe(MIB);
    const res = await post(undefined, { raw: body });
    expect(res.status, res.body.slice(0, 300)).toBe(200);
  });
});
