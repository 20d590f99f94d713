/**
 * `make test`'s closing lines tell a CI log's reader what failed: a file whose `beforeAll` threw
 * (its tests are skipped, none fails) counts as a failure and is named with its error, as is a
 * failed test. Runs vitest with our reporter on two throwaway files in a folder of their own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';

const dir = mkdtempSync(join(repoRoot, '.local', 'reporter-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('names a file whose beforeAll threw, and a failed test, with their first error lines, and counts both', async () => {
  writeFileSync(
    join(dir, 'hook.check.ts'),
    "import { beforeAll, it } from 'vitest';\nbeforeAll(() => { throw new Error('no cluster came up'); });\nit('a', () => {});\nit('b', () => {});\n",
  );
  writeFileSync(join(dir, 'one.check.ts'), "import { expect, it } from 'vitest';\nit('adds', () => expect(1 + 1).toBe(3));\n");
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default { test: { include: ['*.check.ts'], reporters: [${JSON.stringify(join(repoRoot, 'test/support/summary-reporter.ts'))}] } };\n`,
  );
  const run = await promisify(execFile)('npx', ['vitest', 'run', '--root', dir], {
    cwd: repoRoot,
    env: { ...process.env, CTG_TEST_SUMMARY_FILE: '' },
  }).catch((error: { stdout: string; code: number }) => error);
  expect('code' in run ? run.code : 0).toBe(1);
  // Paths as the run's working directory (the repository) names them.
  const at = dir.replace(`${repoRoot}/`, '');
  expect(run.stdout).toContain(`FAILED ${at}/hook.check.ts\n  Error: no cluster came up\n`);
  expect(run.stdout).toContain(`FAILED ${at}/one.check.ts > adds\n  AssertionError: expected 2 to be 3`);
  expect(run.stdout).toMatch(/Tests: 0 passed, 2 failed, 2 skipped\n$/);
});
