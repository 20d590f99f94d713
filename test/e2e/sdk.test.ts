/**
 * The official OpenAI SDKs (Node `openai` from npm, Python `openai` from PyPI in .venv) against
 * the gateway, each run as a separate program the way a user runs it: default (base64,
 * decoded by the SDK) and float requests, and the SDK's own error classes, OpenAI error types
 * and `param` for 400, 401, 403, 404, 429 and (embedder stopped) 503.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, orgName, orgWithKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

const run = promisify(execFile);
const python = join(repoRoot, '.venv/bin/python');
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});

afterAll(async () => {
  await stack?.stop();
});

/** Fresh keys per SDK: a normal one, one whose org lacks the model, one limited to 1 rpm. */
function keysEnv(label: string): Record<string, string> {
  const org = orgName(`${label}-nomodel`);
  createOrg(stack, org, { models: [] });
  return {
    GATEWAY_BASE_URL: stack.baseUrl,
    GATEWAY_CA: stack.dirs.caFile,
    MODEL: stack.svc.modelId,
    KEY: orgWithKey(stack, label).key,
    KEY_WITHOUT_MODEL: createKey(stack, org).key,
    KEY_LIMITED: orgWithKey(stack, `${label}-limited`, { rpm: 1 }).key,
  };
}

/** What each SDK must make of each gateway error: its class, and the body's OpenAI envelope. */
const EXPECTED_ERRORS = {
  400: { class: 'BadRequestError', status: 400, code: 'invalid_body', type: 'invalid_request_error', param: 'input[1]' },
  401: { class: 'AuthenticationError', status: 401, code: 'invalid_api_key', type: 'authentication_error', param: null },
  403: { class: 'PermissionDeniedError', status: 403, code: 'model_not_enabled', type: 'permission_error', param: null },
  404: { class: 'NotFoundError', status: 404, code: 'not_found', type: 'not_found_error', param: null },
  429: { class: 'RateLimitError', status: 429, code: 'rate_limit_exceeded', type: 'rate_limit_error', param: null },
  503: { class: 'InternalServerError', status: 503, code: 'upstream_unavailable', type: 'server_error', param: null },
} as const;

function expectReport(report: any) {
  expect(report.model).toBe(stack.svc.modelId);
  expect(report.defaultLengths).toEqual([1024, 1024]);
  expect(report.floatLengths).toEqual([1024, 1024]);
  expect(report.defaultIsNumbers).toBe(true);
  expect(report.maxAbsDifference).toBeLessThan(1e-6);
  expect(report.usage.total_tokens).toBe(report.usage.prompt_tokens);
  for (const status of [400, 401, 403, 404, 429] as const) {
    expect(report.errors[status], `HTTP ${status}`).toMatchObject(EXPECTED_ERRORS[status]);
  }
}

const nodeClient = (env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/e2e/sdk/node-client.ts')], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_EXTRA_CA_CERTS: stack.dirs.caFile, ...env },
  });
const pythonClient = (env: Record<string, string>) =>
  run(python, [join(repoRoot, 'test/e2e/sdk/python_client.py')], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });

describe('official SDKs with baseURL {base_url}/v1', () => {
  it('the OpenAI Node SDK (CA trusted with NODE_EXTRA_CA_CERTS)', async () => {
    const { stdout } = await nodeClient(keysEnv('sdk-node'));
    const report = JSON.parse(stdout);
    expectReport(report);
    // The Node SDK reads code and message only from an OpenAI-shaped `error` member, which every
    // problem body carries as an extension; it also exposes the gateway's x-request-id.
    for (const status of ['401', '403', '429']) expect(report.errors[status].requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(report.errors['401'].message).not.toContain('no body');
  }, 60_000);

  it('the OpenAI Python SDK (CA passed to its httpx client)', async () => {
    expect(existsSync(python), `${python} missing: run make install`).toBe(true);
    expectReport(JSON.parse((await pythonClient(keysEnv('sdk-py'))).stdout));
  }, 60_000);

  // Last: it stops the stack's embedder.
  it('503 with the embedder stopped is InternalServerError in both SDKs', async () => {
    const env = { ...keysEnv('sdk-503'), MODE: 'unavailable' };
    await stack.stopService('embedder');
    for (const client of [nodeClient, pythonClient]) {
      expect(JSON.parse((await client(env)).stdout).errors['503']).toMatchObject(EXPECTED_ERRORS[503]);
    }
  }, 60_000);
});
