import { defineConfig } from 'vitest/config';

// The image test (make test-images) needs the images scripts/images/build.sh builds with podman,
// as root; its file is *.check.ts, outside the main suite's test/**/*.test.ts.
export default defineConfig({
  test: {
    include: ['test/images/**/*.check.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
