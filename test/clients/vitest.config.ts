import { defineConfig } from 'vitest/config';

// The README clients check (make test-clients) runs apart from `make test`: it needs the
// clients scripts/stack/install-clients.sh installs (~600 MB), so its file is *.check.ts.
export default defineConfig({
  test: {
    include: ['test/clients/**/*.check.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
