/**
 * Issue 25: GET /v1/models and GET /v1/models/{model} through the real gateway (Envoy, authz,
 * the embedder, Redis), in OpenAI's shapes, behind the same key check as embeddings: an
 * organization sees exactly the models it may use, with the rate-limit headers of every /v1
 * request, the spec's 401/403/404/405/429 problems, and no path text in any log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_CONTENT_TYPE, PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { createKey, createOrg, orgName, orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import type { GatewayResponse } from '../support/stack-client.js';
import { mistyped } from '../support/mistype.js';

const CANARY = 'Zebracanary-models-path';
let stack: Stack;
let allowed: CreatedKey;
let noModel: CreatedKey;

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  allowed = orgWithKey(stack, 'models-ok');
  noModel = orgWithKey(stack, 'models-none', { models: [] });
});

afterAll(async () => {
  await stack?.stop();
});

const model = () => stack.svc.modelId;

function get(path: string, key: CreatedKey | undefined, http2 = false, method = 'GET'): Promise<GatewayResponse> {
  return stack.request({ method, path, http2, headers: key ? { authorization: `Bearer ${key.key}` } : {} });
}

function expectProblem(res: GatewayResponse, status: number, code: string): void {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
  expect(res.json().code).toBe(code);
  expect(res.headers['x-request-id']).toBeTruthy();
}

function expectRateLimitHeaders(res: GatewayResponse): void {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    expect(res.headers[name], name).toMatch(/^\d+$/);
  }
}

describe('GET /v1/models through the gateway', () => {
  it.each([false, true])('lists the served model for an organization that may use it (http2: %s)', async (http2) => {
    const res = await get('/v1/models', allowed, http2);
    expect(res.status, res.body).toBe(200);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data).toEqual([{ id: model(), object: 'model', created: expect.any(Number), owned_by: 'clinical-embedding-gateway' }]);
    expectRateLimitHeaders(res);
  });

  it('lists nothing for an organization that may not use the model', async () => {
    const res = await get('/v1/models', noModel);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ object: 'list', data: [] });
    expectRateLimitHeaders(res);
  });

  it('retrieves the model it lists; another, or one the organization may not use, is 403 model_not_enabled', async () => {
    const res = await get(`/v1/models/${model()}?extra=1`, allowed);
    expect(res.status, res.body).toBe(200);
    expect(res.json()).toEqual((await get('/v1/models', allowed)).json().data[0]);
    expectRateLimitHeaders(res);
    expectProblem(await get(`/v1/models/${model()}`, noModel), 403, 'model_not_enabled');
    const unknown = await get(`/v1/models/${CANARY}`, allowed);
    expectProblem(unknown, 403, 'model_not_enabled');
    expect(unknown.body).not.toContain(CANARY);
  });

  it('needs a valid key: none or a wrong one is 401, before the embedder is asked', async () => {
    expectProblem(await get('/v1/models', undefined), 401, 'missing_api_key');
    expectProblem(await get(`/v1/models/${model()}`, { ...allowed, key: mistyped(allowed.key) }, true), 401, 'invalid_api_key');
  });

  it('needs the embeddings endpoint: an organization without it is 403 endpoint_not_enabled', async () => {
    const org = orgName('models-disabled');
    createOrg(stack, org, { models: [model()] });
    const key = createKey(stack, org);
    stack.admin(['org', 'disable', org]);
    expectProblem(await get('/v1/models', key), 403, 'endpoint_not_enabled');
  });

  it('counts against the requests-per-minute limit like every /v1 request: 429 with retry-after past it', async () => {
    const limited = orgWithKey(stack, 'models-limited', { rpm: 2 });
    const statuses: number[] = [];
    let last: GatewayResponse | undefined;
    for (let i = 0; i < 4; i++) {
      last = await get('/v1/models', limited);
      statuses.push(last.status);
    }
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expectProblem(last!, 429, 'rate_limit_exceeded');
    expect(last!.headers['retry-after']).toMatch(/^\d+$/);
  });

  it('other methods are 405 with allow: GET (no key needed); deeper paths are 404', async () => {
    for (const [method, path] of [
      ['POST', '/v1/models'],
      ['DELETE', `/v1/models/${model()}`],
      ['HEAD', '/v1/models'],
    ]) {
      const res = await get(path!, undefined, false, method);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.allow).toBe('GET');
      if (method !== 'HEAD') expect(res.json().code).toBe('method_not_allowed');
    }
    expectProblem(await get(`/v1/models/${model()}/extra`, allowed), 404, 'not_found');
    expectProblem(await get('/v1/models/', allowed), 404, 'not_found');
  });

  it('the model path reaches no log line', () => {
    for (const name of ['envoy', 'authz', 'embedder']) {
      expect(readFileSync(join(stack.dirs.logDir, `${name}.log`), 'utf8'), name).not.toContain('Zebracanary');
    }
  });
});
