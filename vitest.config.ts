import { defineConfig } from 'vitest/config';

// Integration and end-to-end suites start real processes (Redis, gRPC servers, Envoy,
// onnxruntime sessions); they must not compete for the 2 cores with each other, so
// files run one at a time and each gets generous hook timeouts for process start-up.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The *.unit.test.ts files run behind the unit guard here too (test/support/unit-guard.ts).
    setupFiles: ['test/support/unit-setup.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
