import { defineConfig } from 'vitest/config';

// `make check`: the unit tests alone (*.unit.test.ts: no process, thread, server or connection,
// test/support/unit-guard.ts enforces it), in parallel since they share nothing. `make test`
// runs them too, with everything else (vitest.config.ts includes every *.test.ts).
export default defineConfig({
  test: {
    include: ['test/**/*.unit.test.ts'],
    setupFiles: ['test/support/unit-setup.ts'],
    testTimeout: 10_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
