/**
 * The embedder through inject() with the generated test model: every rule of the spec for
 * POST /v1/embeddings, GET /health, errors, headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { fromBase64 } from '../../embedder/src/http/encoding.js';
import { readManifest } from '../../contract/model-manifest.js';
import { loadTokenizer } from '../../embedder/src/model/tokenizer.js';
import { catalogue } from '../../openapi/problems.js';
import { testGrant, TEST_MODEL_ID, ensureTestModel, startTestEmbedder, type TestEmbedder } from '../support/embedder-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FIXED_NOW = 1_767_225_600_123; // 2026-01-01T00:00:00.123Z

let embedder: TestEmbedder;
let queryInstructionTokens: number;

beforeAll(async () => {
  const dir = ensureTestModel();
  const manifest = readManifest(dir);
  // Content tokens of the instruction alone: its encoding minus [CLS] and [SEP].
  queryInstructionTokens = loadTokenizer(dir).encode(manifest.queryInstruction.trim()).length - 2;
  embedder = await startTestEmbedder(dir, { now: () => FIXED_NOW });
});
afterAll(async () => embedder?.close());

const post = (payload: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
  embedder.app.inject({ method: 'POST', url: '/v1/embeddings', payload: payload as object, headers: { ...testGrant(), ...headers } });
const embed = (fields: Record<string, unknown>) => post({ model: TEST_MODEL_ID, ...fields });
/** "a a a …": `n` content tokens, so `n + 2` with [CLS] and [SEP]. */
const tokens = (n: number): string => Array.from({ length: n }, () => 'a').join(' ');

/** Same input, different batch mates: equal up to float rounding (padding changes the kernels' sums). */
function expectSameVector(a: number[], b: number[]): void {
  expect(a).toHaveLength(b.length);
  expect(Math.max(...a.map((x, i) => Math.abs(x - b[i]!)))).toBeLessThan(1e-5);
}

function expectProblem(res: LightMyRequestResponse, code: string, detail?: RegExp | string): void {
  const entry = catalogue.get(code as never)!;
  expect(res.statusCode).toBe(entry.status);
  expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(res.headers['x-request-id']).toBeTruthy();
  const body = res.json();
  expect(body).toMatchObject({ status: entry.status, title: entry.title, code });
  if (detail instanceof RegExp) expect(body.detail).toMatch(detail);
  else if (detail !== undefined) expect(body.detail).toContain(detail);
}

describe('POST /v1/embeddings: success', () => {
  it('answers the spec shape for one string', async () => {
    const res = await embed({ input: 'heart attack' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['created', 'data', 'id', 'model', 'object', 'usage']);
    expect(body.id).toMatch(/^embd-[0-9a-f]{32}$/);
    expect(body).toMatchObject({
      object: 'list',
      created: 1_767_225_600,
      model: TEST_MODEL_ID,
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    const vector = body.data[0].embedding as number[];
    expect(vector).toHaveLength(1024);
    expect(vector.reduce((s, x) => s + x * x, 0)).toBeCloseTo(1, 5);
    expect(res.headers['x-usage-total-tokens']).toBe('4');
  });

  it('keeps input order and counts every input in usage', async () => {
    const inputs = ['heart attack', 'fractured femur of the left leg', 'heart attack'];
    const body = (await embed({ input: inputs })).json();
    expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1, 2]);
    expect(body.data[0].embedding).toEqual(body.data[2].embedding);
    expect(body.data[0].embedding).not.toEqual(body.data[1].embedding);
    const single = await Promise.all(inputs.map(async (input) => (await embed({ input })).json()));
    expect(body.usage.total_tokens).toBe(single.reduce((n, s) => n + s.usage.total_tokens, 0));
    for (const [i, s] of single.entries()) expectSameVector(s.data[0].embedding, body.data[i].embedding);
  });

  it('base64 is the float vector as little-endian float32, 4096 bytes', async () => {
    const [asFloat, asBase64] = await Promise.all([
      embed({ input: 'heart attack' }),
      embed({ input: 'heart attack', encoding_format: 'base64' }),
    ]);
    const text = asBase64.json().data[0].embedding as string;
    expect(Buffer.from(text, 'base64')).toHaveLength(4096);
    // The float form carries the same float32 values in nine digits at most (encoding.ts).
    expect(fromBase64(text)).toEqual(Float32Array.from(asFloat.json().data[0].embedding as number[]));
  });

  it('query prepends the instruction (counted in usage); document equals no input_type', async () => {
    const [none, doc, query] = await Promise.all([
      embed({ input: 'heart attack' }),
      embed({ input: 'heart attack', input_type: 'document' }),
      embed({ input: 'heart attack', input_type: 'query' }),
    ]);
    expect(doc.json().data[0].embedding).toEqual(none.json().data[0].embedding);
    expect(query.json().data[0].embedding).not.toEqual(none.json().data[0].embedding);
    expect(query.json().usage.total_tokens).toBe(4 + queryInstructionTokens);
  });

  it('accepts user and drops unknown fields', async () => {
    const res = await embed({ input: 'heart attack', user: 'someone', unknown_field: { nested: true } });
    expect(res.statusCode).toBe(200);
  });

  it('serves 1,000 inputs', async () => {
    const inputs = Array.from({ length: 1000 }, (_, i) => `note ${i}`);
    const res = await embed({ input: inputs, encoding_format: 'base64' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.data).toHaveLength(1000);
    expect(body.data.map((d: { index: number }) => d.index)).toEqual(inputs.map((_, i) => i));
  });
});

describe('online requests in flight, which hold the batch lane back', () => {
  it('marks POST /v1/embeddings from arrival to its response, and nothing else', async () => {
    const { online } = embedder.engine;
    let ended = 0;
    online.onIdle(() => (ended += 1));
    let busyAtModel = false;
    const pending = embed({ input: 'heart attack' });
    // The request is in flight before its response: seen busy while it is handled.
    while (!busyAtModel && ended === 0) {
      busyAtModel = online.busy;
      await new Promise((r) => setImmediate(r));
    }
    expect((await pending).statusCode).toBe(200);
    expect(busyAtModel).toBe(true);
    expect(ended).toBe(1);
    expect(online.busy).toBe(false);
    // A refused one ends too; another path is not online work.
    expect((await embed({ input: 7 })).statusCode).toBe(400);
    expect(ended).toBe(2);
    expect((await embedder.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    expect(ended).toBe(2);
  });
});

describe('the 512-token limit', () => {
  it('512 tokens pass; 513 fail the whole request with vLLM-style detail', async () => {
    const ok = await embed({ input: tokens(510) });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().usage.total_tokens).toBe(512);
    const over = await embed({ input: ['short', tokens(511)] });
    expectProblem(over, 'invalid_request', "This model's maximum context length is 512 tokens. However, you requested 513 tokens");
  });

  it('counts the query instruction', async () => {
    const fits = await embed({ input: tokens(510 - queryInstructionTokens), input_type: 'query' });
    expect(fits.json().usage.total_tokens).toBe(512);
    const over = await embed({ input: tokens(511 - queryInstructionTokens), input_type: 'query' });
    expectProblem(over, 'invalid_request', 'you requested 513 tokens');
  });

  it('truncate_prompt_tokens -1 keeps the first 512 tokens and counts only those', async () => {
    const res = await embed({ input: [tokens(700), 'heart attack'], truncate_prompt_tokens: -1 });
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.total_tokens).toBe(512 + 4);
    // The cut keeps the first tokens: the same as sending exactly the first 510 content tokens.
    const exact = await embed({ input: tokens(510) });
    expectSameVector(res.json().data[0].embedding, exact.json().data[0].embedding);
  });

  it('truncate_prompt_tokens k in 2..512 keeps k tokens; every other value is invalid_body naming it', async () => {
    const res = await embed({ input: [tokens(20), 'heart attack'], truncate_prompt_tokens: 5 });
    expect(res.json().usage.total_tokens).toBe(5 + 4);
    expectSameVector(res.json().data[0].embedding, (await embed({ input: tokens(3) })).json().data[0].embedding);
    expect((await embed({ input: tokens(600), truncate_prompt_tokens: 512 })).json().usage.total_tokens).toBe(512);
    expect((await embed({ input: tokens(20), truncate_prompt_tokens: 2 })).json().usage.total_tokens).toBe(2);
    const refusals: Array<[number, string]> = [
      [513, 'must be -1 or at most 512'],
      [10_000, 'must be -1 or at most 512'],
      [0, 'must be -1 or at least 2'],
      [1, 'must be -1 or at least 2'],
      [-2, 'must be -1 or at least 2'],
    ];
    for (const [bad, message] of refusals) {
      const refused = await embed({ input: 'x', truncate_prompt_tokens: bad });
      expectProblem(refused, 'invalid_body');
      expect(refused.json().detail).toBe(`truncate_prompt_tokens: ${message}`);
      expect(refused.json().error.param).toBe('truncate_prompt_tokens');
    }
  });
});

describe('POST /v1/embeddings: refusals', () => {
  const cases: Array<[unknown, string]> = [
    [{ input: 'x' }, 'model: is required'],
    [{ model: TEST_MODEL_ID }, 'input: is required'],
    [{ model: TEST_MODEL_ID, input: '' }, 'input: must not be empty'],
    [{ model: TEST_MODEL_ID, input: [] }, 'input: must contain at least 1 item'],
    [{ model: TEST_MODEL_ID, input: Array.from({ length: 1001 }, () => 'x') }, 'input: must contain at most 1000 items'],
    [{ model: TEST_MODEL_ID, input: ['ok', ''] }, 'input[1]: must not be empty'],
    [{ model: TEST_MODEL_ID, input: ['ok', 5] }, 'input[1]: must be a string'],
    [{ model: TEST_MODEL_ID, input: 5 }, 'input: must be a string or an array'],
    [{ model: 5, input: 'x' }, 'model: must be a string'],
    [{ model: TEST_MODEL_ID, input: 'x', input_type: 'passage' }, 'input_type: must be one of query, document'],
    [{ model: TEST_MODEL_ID, input: 'x', encoding_format: 'int8' }, 'encoding_format: must be one of float, base64'],
    [{ model: TEST_MODEL_ID, input: 'x', truncate_prompt_tokens: '-1' }, 'truncate_prompt_tokens: must be an integer'],
    [{ model: TEST_MODEL_ID, input: 'x', dimensions: 'many' }, 'dimensions: must be an integer or null'],
    [{ model: TEST_MODEL_ID, input: 'x', user: 7 }, 'user: must be a string'],
    [['x'], 'body: must be a JSON object'],
  ];
  it.each(cases.map(([payload, detail]) => ({ payload, detail })))('invalid_body "$detail"', async ({ payload, detail }) => {
    const res = await post(payload);
    expectProblem(res, 'invalid_body');
    expect(res.json().detail).toBe(detail);
    // error.param is the field the detail names, for clients that read OpenAI's envelope.
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: detail.split(':')[0], code: 'invalid_body' });
  });

  it('serves only the model authz granted to this request (the signed grant), whatever the body or other headers say', async () => {
    const body = { model: TEST_MODEL_ID, input: 'x' };
    const ungranted = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      payload: body,
      headers: { 'x-gateway-model': TEST_MODEL_ID },
    });
    expectProblem(ungranted, 'invalid_api_key');
    const granted = (model: string) =>
      embedder.app.inject({ method: 'POST', url: '/v1/embeddings', payload: body, headers: testGrant({ model }) });
    expectProblem(await granted('another-model'), 'model_not_enabled');
    expectProblem(await granted(''), 'model_not_enabled');
    // The body is still validated first: a bad body is a 400 whatever the grant says of the model.
    expectProblem(
      await embedder.app.inject({
        method: 'POST',
        url: '/v1/embeddings',
        payload: { model: 5, input: 'x' },
        headers: testGrant({ model: '' }),
      }),
      'invalid_body',
      'model',
    );
    expect((await post(body)).statusCode).toBe(200);
  });

  it.each([
    ['a lone surrogate escape', '{"model":"%M","input":"x\\ud800y"}'],
    ['1,000-deep nesting in an ignored field', `{"model":"%M","input":"x","extra":${'['.repeat(1000)}${']'.repeat(1000)}}`],
  ])('refuses a body two JSON parsers read differently: %s → invalid_body naming body', async (_name, text) => {
    const res = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { 'content-type': 'application/json', ...testGrant() },
      payload: text.replace('%M', TEST_MODEL_ID),
    });
    expectProblem(res, 'invalid_body', /^body: /);
  });

  it('refuses invalid UTF-8 bytes rather than embedding replacement characters', async () => {
    const payload = Buffer.concat([Buffer.from(`{"model":"${TEST_MODEL_ID}","input":"x`), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const res = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { 'content-type': 'application/json', ...testGrant() },
      payload,
    });
    expectProblem(res, 'invalid_body', 'body: must be UTF-8 encoded');
  });

  it('dimensions → invalid_request; another model → model_not_enabled', async () => {
    expectProblem(await embed({ input: 'x', dimensions: 1024 }), 'invalid_request', /^dimensions is not supported/);
    expectProblem(await post({ model: 'text-embedding-3-small', input: 'x' }), 'model_not_enabled', 'model');
    expect((await post({ model: 'text-embedding-3-small', input: 'x' })).json().error).toMatchObject({
      type: 'permission_error',
      param: null,
    });
    expect((await embed({ input: 'x', dimensions: 1024 })).json().error).toMatchObject({ type: 'invalid_request_error', param: null });
  });

  it('Content-Type must contain json; others, and a missing one, are invalid_body naming content-type', async () => {
    const raw = (headers: Record<string, string>, payload?: string) =>
      embedder.app.inject({
        method: 'POST',
        url: '/v1/embeddings',
        headers: { ...testGrant(), ...headers },
        ...(payload === undefined ? {} : { payload }),
      });
    const json = JSON.stringify({ model: TEST_MODEL_ID, input: 'x' });
    expectProblem(await raw({ 'content-type': 'text/plain' }, json), 'invalid_body', 'content-type');
    expectProblem(await raw({ 'content-type': 'text/plain; note=json' }, json), 'invalid_body', 'content-type');
    expectProblem(await raw({}), 'invalid_body', 'content-type');
    expect((await raw({ 'content-type': 'text/plain' }, json)).json().error.param).toBe('content-type');
    expect((await raw({ 'content-type': 'application/vnd.api+json; charset=utf-8' }, json)).statusCode).toBe(200);
    expect((await raw({ 'content-type': 'text/json' }, json)).statusCode).toBe(200);
  });

  it('invalid JSON and an empty body are invalid_body; the process stays up', async () => {
    const raw = (payload: string) =>
      embedder.app.inject({
        method: 'POST',
        url: '/v1/embeddings',
        headers: { 'content-type': 'application/json', ...testGrant() },
        payload,
      });
    expectProblem(await raw('{"model": '), 'invalid_body', 'body: must be valid JSON');
    expect((await raw('{"model": ')).json().error.param).toBe('body');
    expectProblem(await raw(''), 'invalid_body', 'body');
    expect((await embed({ input: 'still up' })).statusCode).toBe(200);
  });

  it('a body over 1 MiB is 413 payload_too_large; exactly 1 MiB is read', async () => {
    const over = JSON.stringify({ model: TEST_MODEL_ID, input: 'a'.repeat(1_048_576) });
    expectProblem(
      await embedder.app.inject({
        method: 'POST',
        url: '/v1/embeddings',
        headers: { 'content-type': 'application/json', ...testGrant() },
        payload: over,
      }),
      'payload_too_large',
    );
    const skeleton = JSON.stringify({ model: TEST_MODEL_ID, input: '' });
    const exact = JSON.stringify({ model: TEST_MODEL_ID, input: 'a'.repeat(1_048_576 - skeleton.length) });
    expect(Buffer.byteLength(exact)).toBe(1_048_576);
    const res = await embedder.app.inject({
      method: 'POST',
      url: '/v1/embeddings',
      headers: { 'content-type': 'application/json', ...testGrant() },
      payload: exact,
    });
    expect(res.statusCode).toBe(200); // one over-long word: a single [UNK] token
  });
});

describe('paths, methods, headers', () => {
  it('GET /health is {"status":"ok"}', async () => {
    const res = await embedder.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('unknown path → 404 not_found; wrong method → 405 with allow', async () => {
    expectProblem(await embedder.app.inject({ method: 'GET', url: '/v1/completions' }), 'not_found');
    const wrong = await embedder.app.inject({ method: 'GET', url: '/v1/embeddings' });
    expectProblem(wrong, 'method_not_allowed');
    expect(wrong.headers.allow).toBe('POST');
    const put = await embedder.app.inject({
      method: 'PUT',
      url: '/v1/embeddings',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expectProblem(put, 'method_not_allowed');
    for (const method of ['POST', 'DELETE', 'HEAD'] as const) {
      const res = await embedder.app.inject({ method, url: '/health' });
      expect(res.statusCode).toBe(405);
      expect(res.headers.allow).toBe('GET');
    }
  });

  it('echoes x-request-id on every response, or generates a UUID', async () => {
    const sent = { 'x-request-id': 'req-123' };
    const responses = await Promise.all([
      embedder.app.inject({ method: 'GET', url: '/health', headers: sent }),
      embedder.app.inject({ method: 'GET', url: '/nowhere', headers: sent }),
      embedder.app.inject({ method: 'DELETE', url: '/v1/embeddings', headers: sent }),
      post({ model: TEST_MODEL_ID, input: [] }, sent),
      post({ model: TEST_MODEL_ID, input: 'x' }, sent),
    ]);
    for (const res of responses) expect(res.headers['x-request-id']).toBe('req-123');
    const generated = await embedder.app.inject({ method: 'GET', url: '/health' });
    expect(generated.headers['x-request-id']).toMatch(UUID);
  });

  it('an x-request-id outside the documented rule is invalid_body naming x-request-id', async () => {
    for (const id of ['bad id', 'x'.repeat(201), 'caf\u00e9']) {
      const res = await post({ model: TEST_MODEL_ID, input: 'x' }, { 'x-request-id': id });
      expectProblem(res, 'invalid_body', /^x-request-id: must /);
      expect(res.json().error.param).toBe('x-request-id');
      // Never echoed: the answer carries a fresh id, as the gateway's own refusal does.
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('GET /ready is 200 once the model is loaded', async () => {
    const res = await embedder.app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', model: TEST_MODEL_ID });
  });
});
