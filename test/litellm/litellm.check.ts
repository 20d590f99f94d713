/**
 * litellm (its OpenAI-compatible path, `openai/<model>` with `api_base`) against the gateway:
 * it classifies errors by the body's `error.type` before the status, so this pins the class
 * it raises for each gateway error. Run by `make test-litellm` (needs .venv-litellm).
 * Generous timeouts: importing litellm alone takes 5 s of CPU, 15-20 s on a loaded 2-core box.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, orgName, orgWithKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

const run = promisify(execFile);
const python = join(repoRoot, '.venv-litellm/bin/python');
let stack: Stack;

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
});

afterAll(async () => {
  await stack?.stop();
});

function litellmClient(label: string, extra: Record<string, string> = {}) {
  const org = orgName(`${label}-nomodel`);
  createOrg(stack, org, { models: [] });
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    // litellm fetches its model price list from the internet at import unless told not to.
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    GATEWAY_BASE_URL: stack.baseUrl,
    GATEWAY_CA: stack.dirs.caFile,
    MODEL: stack.svc.modelId,
    KEY: orgWithKey(stack, label).key,
    KEY_WITHOUT_MODEL: createKey(stack, org).key,
    KEY_LIMITED: orgWithKey(stack, `${label}-limited`, { rpm: 1 }).key,
    ...extra,
  };
  return run(python, [join(repoRoot, 'test/e2e/sdk/litellm_client.py')], { cwd: repoRoot, env });
}

describe('litellm with model openai/<id> and api_base {base_url}/v1', () => {
  it('embeds, and raises the right exception class for 400, 401, 403, 404, 429', async () => {
    expect(existsSync(python), `${python} missing: run bash scripts/stack/install-litellm.sh`).toBe(true);
    const report = JSON.parse((await litellmClient('litellm')).stdout);
    expect(report.lengths).toEqual([1024]);
    expect(report.errors).toEqual({
      400: { class: 'BadRequestError', status: 400 },
      '400_context': { class: 'ContextWindowExceededError', status: 400 },
      401: { class: 'AuthenticationError', status: 401 },
      // litellm's OpenAI path has no 403 class: an APIError that keeps the status, which is
      // as close as it gets (with invalid_request_error in the body it was BadRequestError).
      403: { class: 'APIError', status: 403 },
      404: { class: 'NotFoundError', status: 404 },
      429: { class: 'RateLimitError', status: 429 },
    });
  }, 240_000);

  // Last: it stops the stack's embedder.
  it('503 with the embedder stopped is ServiceUnavailableError', async () => {
    await stack.stopService('embedder');
    const report = JSON.parse((await litellmClient('litellm-503', { MODE: 'unavailable' })).stdout);
    expect(report.errors['503']).toEqual({ class: 'ServiceUnavailableError', status: 503 });
  }, 120_000);
});
