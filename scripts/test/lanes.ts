/**
 * `make test`'s vitest run, in the lanes vitest.config.ts declares: `stack`, `static` and `fleet`
 * side by side (one file each at a time), then `timing` alone. The suite alone kept about half of 2 cores
 * busy when every file ran one after another (19.9 min wall for 11.3 CPU-min); two lanes use the
 * idle half, and the files that bound a time still run with nothing of the suite beside them.
 * `stack` prints as it runs; the others' output is kept and printed when all three are done, so
 * the log reads one lane at a time. Ends with one `Tests: N passed, N failed, N skipped` line for the
 * whole run, under each failed file (or error) and its first message line, and exits non-zero when
 * any lane failed.
 *   node --import tsx scripts/test/lanes.ts [vitest args…]
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../contract/repo-root.js';

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
  /** Each failed file or error, with its first message line (test/support/summary-reporter.ts). */
  failures?: Array<{ file: string; error: string }>;
}

const dir = join(repoRoot, '.local', 'test-lanes');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const extra = process.argv.slice(2);

/** Runs one lane; its output goes to the terminal, or to `log` when given. */
function lane(name: string, log?: string): Promise<number> {
  const child = spawn('npx', ['vitest', 'run', '--project', name, ...extra], {
    cwd: repoRoot,
    env: { ...process.env, CTG_TEST_LANE: name, CTG_TEST_SUMMARY_FILE: join(dir, `${name}.json`) },
    stdio: log ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
  if (log) {
    const out = createWriteStream(log);
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
}

function counts(name: string): Counts {
  try {
    return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as Counts;
  } catch {
    // A lane that ended before its reporter ran (it could not start, or was killed) counts as a failure.
    return { passed: 0, failed: 1, skipped: 0, failures: [{ file: `lane ${name}`, error: 'ended before its reporter ran' }] };
  }
}

// Beside `stack`, which prints as it runs: `static` and `fleet`, their output kept and printed after.
const kept = ['static', 'fleet'];
const codes: Record<string, number> = {};
await Promise.all([
  lane('stack').then((c) => (codes.stack = c)),
  ...kept.map((name) => lane(name, join(dir, `${name}.log`)).then((c) => (codes[name] = c))),
]);
for (const name of kept)
  process.stdout.write(`\n── lane ${name} (run beside lane stack) ──\n${readFileSync(join(dir, `${name}.log`), 'utf8')}\n`);
process.stdout.write('── lane timing ──\n');
codes.timing = await lane('timing');

const lanes = Object.keys(codes).map((name) => ({ name, ...counts(name) }));
// The failures last, above the closing lines, where a CI log's tail shows them.
for (const { name, failures = [] } of lanes)
  for (const { file, error } of failures) process.stdout.write(`FAILED [${name}] ${file}\n  ${error}\n`);
const total = lanes.reduce(
  (sum, c) => ({ passed: sum.passed + c.passed, failed: sum.failed + c.failed, skipped: sum.skipped + c.skipped }),
  {
    passed: 0,
    failed: 0,
    skipped: 0,
  },
);
process.stdout.write(
  `\nLanes: ${Object.entries(codes)
    .map(([n, c]) => `${n} ${c === 0 ? 'passed' : `failed (exit ${c})`}`)
    .join(', ')}\n`,
);
process.stdout.write(`Tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
process.exit(Object.values(codes).some((c) => c !== 0) ? 1 : 0);
