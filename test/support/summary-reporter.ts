/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so CI logs (and the workplace's CI reader) can count results in any runner format.
 * Before it, the slowest files and their share of the run: `make test` must stay under 20
 * minutes, and this is where a CI log says what to shorten.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const durations: Array<[string, number]> = [];
    for (const mod of modules) {
      durations.push([mod.moduleId, mod.diagnostic().duration]);
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failed += 1;
        else skipped += 1;
      }
      // A file that failed to load has no tests but must still count as a failure.
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed += 1;
    }
    const total = durations.reduce((sum, [, ms]) => sum + ms, 0);
    const slowest = durations.sort((a, b) => b[1] - a[1]).slice(0, 15);
    process.stdout.write(`\nSlowest files (of ${(total / 1000).toFixed(0)} s in all):\n`);
    for (const [file, ms] of slowest) {
      process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file.replace(`${process.cwd()}/`, '')}\n`);
    }
    // Under scripts/test/lanes.ts each lane hands its counts over, and the runner prints the one
    // Tests line for the whole run.
    const file = process.env.CTG_TEST_SUMMARY_FILE;
    if (file) {
      writeFileSync(file, JSON.stringify({ passed, failed, skipped }));
      process.stdout.write(`\nLane ${process.env.CTG_TEST_LANE ?? '?'}: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
      return;
    }
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
