/**
 * Schemathesis (PyPI, pinned in .venv) against openapi/openapi.yaml through the real gateway:
 * property-based requests from the document's own schemas, every check on, and the suite
 * fails on any failed check (for instance a request valid by the schema but refused, a
 * response that does not match its documented status, headers or body, or a 5xx).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgWithKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';

const run = promisify(execFile);
const schemathesis = join(repoRoot, '.venv/bin/schemathesis');
// Bounded: at most 50 examples per operation and phase (about 20 s on 2 cores with the small
// test model); the fixed seed makes a failure reproducible.
const MAX_EXAMPLES = 50;
const SEED = 20_261_123;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
});

afterAll(async () => {
  await stack?.stop();
});

describe('schemathesis against openapi/openapi.yaml through the gateway', () => {
  it('finds no failed check', async () => {
    expect(existsSync(schemathesis), `${schemathesis} missing: run make install`).toBe(true);
    // Limits high enough that no generated request meets the rate limit.
    const { key } = orgWithKey(stack, 'schemathesis', { rpm: 100_000, tpm: 100_000_000 });
    const args = [
      'run',
      join(repoRoot, 'openapi/openapi.yaml'),
      '--url',
      stack.baseUrl,
      '--tls-verify',
      stack.dirs.caFile,
      '--header',
      `Authorization: Bearer ${key}`,
      '--checks',
      'all',
      '--max-examples',
      String(MAX_EXAMPLES),
      '--seed',
      String(SEED),
      '--workers',
      '1',
      '--request-timeout',
      '30',
      '--suppress-health-check',
      'too_slow',
      '--no-color',
    ];
    const result = await run(schemathesis, args, {
      // Its replay cache (.schemathesis/) goes to the stack's temporary directory, not the clone.
      cwd: stack.dirs.dir,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        MODEL: stack.svc.modelId,
        PYTHONPATH: join(repoRoot, 'test/e2e'),
        SCHEMATHESIS_HOOKS: 'schemathesis_hooks',
      },
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? -1,
        stdout: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
    expect(result.code, result.stdout).toBe(0);
  }, 150_000);
});
