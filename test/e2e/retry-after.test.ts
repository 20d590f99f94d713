/**
 * Issue 25: `overloaded` tells the truth in `retry-after`. Four parallel 1,000-input requests from
 * one organization fill its queue share; with `retry-after: 1` the OpenAI SDK's two retries
 * (about 3 s) gave up while the queue drained, and 3 of 4 failed. Now each refusal says when the
 * organization's queued work, and the requests told to wait before it, will have drained, so the
 * SDK's default retries get all four through. Through the whole gateway, default model.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { orgWithKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import { metricValue } from '../support/embedder-app.js';

const run = promisify(execFile);
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

it('the OpenAI Python SDK with its default retries gets four parallel 1,000-input requests through', async () => {
  const { stdout } = await run(join(repoRoot, '.venv/bin/python'), [join(repoRoot, 'test/e2e/sdk/parallel_python.py')], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      GATEWAY_BASE_URL: stack.baseUrl,
      GATEWAY_CA: stack.dirs.caFile,
      KEY: orgWithKey(stack, 'parallel').key,
      MODEL: stack.svc.modelId,
    },
  });
  expect(JSON.parse(stdout)).toEqual(['ok:1000', 'ok:1000', 'ok:1000', 'ok:1000']);
  // It went through the refusals (the queue share holds one such request), not around them.
  const token = readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim();
  const metrics = await fetch(`http://127.0.0.1:${stack.ports.embedder}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(metricValue(await metrics.text(), 'embedder_overloaded_total')).toBeGreaterThanOrEqual(2);
}, 300_000);
