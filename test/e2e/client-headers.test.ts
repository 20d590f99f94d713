/**
 * Issue 20's additions through the real gateway (Envoy over HTTPS, authz, the embedder with the
 * default model): Envoy passes `x-input-type` to the embedder and `x-model-fingerprint` /
 * `x-truncated-inputs` back to the client, on HTTP/1.1 and HTTP/2; `dimensions: null` is 200.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelFingerprint } from '../../embedder/src/model/fingerprint.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { startStack, type Stack } from '../support/stack.js';

let stack: Stack;
let key: CreatedKey;

beforeAll(async () => {
  stack = await startStack();
  key = orgWithKey(stack, 'client-headers');
});

afterAll(async () => {
  await stack?.stop();
});

function post(body: Record<string, unknown>, headers: Record<string, string> = {}, http2 = false) {
  return stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    http2,
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: stack.svc.modelId, input: 'Patient denies chest pain.', ...body }),
  });
}

async function vector(body: Record<string, unknown>, headers: Record<string, string> = {}, http2 = false): Promise<number[]> {
  const res = await post(body, headers, http2);
  expect(res.status, res.body).toBe(200);
  return res.json().data[0].embedding;
}

describe.each([false, true])('through Envoy (http2: %s)', (http2) => {
  it('x-input-type: query reaches the embedder: the query vector, as the body field gives', async () => {
    const [plain, query] = await Promise.all([vector({}, {}, http2), vector({ input_type: 'query' }, {}, http2)]);
    expect(query).not.toEqual(plain);
    expect(await vector({}, { 'x-input-type': 'query' }, http2)).toEqual(query);
    expect(await vector({ input_type: 'document' }, { 'x-input-type': 'query' }, http2)).toEqual(plain);
    const bad = await post({}, { 'x-input-type': 'passage' }, http2);
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'invalid_body', error: { param: 'x-input-type' } });
  });

  it('x-model-fingerprint and x-truncated-inputs reach the client; dimensions null is 200', async () => {
    const res = await post({ input: ['short', 'a '.repeat(700)], truncate_prompt_tokens: -1, dimensions: null }, {}, http2);
    expect(res.status, res.body).toBe(200);
    expect(res.headers['x-model-fingerprint']).toBe(await modelFingerprint(stack.svc.modelDir));
    expect(res.headers['x-truncated-inputs']).toBe('1:702');
    expect((await post({ dimensions: 1024 }, {}, http2)).json()).toMatchObject({ code: 'invalid_request' });
  });
});
