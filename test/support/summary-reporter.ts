/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so CI logs (and the workplace's CI reader) can count results in any runner format.
 * Before it, the slowest files and their share of the run: `make test` must stay under 20
 * minutes, and this is where a CI log says what to shorten. A run can fail with no failed test (a
 * `beforeAll` that threw skips its file's tests; an error no test caught): each such file and
 * error is named, with its first message line, right above the closing line, where a log's tail
 * shows it, and counts as one failure.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/** One failed file (or `unhandled`) and its first error's first line. */
interface Failure {
  readonly file: string;
  readonly error: string;
}

const firstLine = (error: SerializedError | undefined): string =>
  (error ? `${error.name ?? 'Error'}: ${error.message ?? ''}` : 'failed').split('\n')[0]!.slice(0, 240);

/** The errors a file holds outside its tests: its own (collection), and its suites' hooks. */
function fileErrors(mod: TestModule): SerializedError[] {
  return [...mod.errors(), ...[...mod.children.allSuites()].flatMap((suite) => suite.errors())];
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError> = []): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const failures: Failure[] = [];
    const durations: Array<[string, number]> = [];
    for (const mod of modules) {
      const file = mod.moduleId.replace(`${process.cwd()}/`, '');
      durations.push([file, mod.diagnostic().duration]);
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed += 1;
        else if (result.state === 'failed') {
          failed += 1;
          failedHere += 1;
          if (failedHere === 1) failures.push({ file: `${file} > ${test.fullName}`, error: firstLine(result.errors?.[0]) });
        } else skipped += 1;
      }
      // A file that failed with no failed test (it did not load, a hook threw) is one failure.
      if (mod.state() === 'failed' && failedHere === 0) {
        failed += 1;
        failures.push({ file, error: firstLine(fileErrors(mod)[0]) });
      }
    }
    for (const error of unhandled) {
      failed += 1;
      failures.push({ file: 'unhandled error', error: firstLine(error) });
    }
    const total = durations.reduce((sum, [, ms]) => sum + ms, 0);
    const slowest = durations.sort((a, b) => b[1] - a[1]).slice(0, 15);
    process.stdout.write(`\nSlowest files (of ${(total / 1000).toFixed(0)} s in all):\n`);
    for (const [file, ms] of slowest) process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}\n`);
    // Under scripts/test/lanes.ts each lane hands its counts over, and the runner prints the
    // failures and the one Tests line for the whole run.
    const summary = process.env.CTG_TEST_SUMMARY_FILE;
    if (summary) {
      writeFileSync(summary, JSON.stringify({ passed, failed, skipped, failures }));
      process.stdout.write(`\nLane ${process.env.CTG_TEST_LANE ?? '?'}: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
      return;
    }
    for (const { file, error } of failures) process.stdout.write(`FAILED ${file}\n  ${error}\n`);
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
