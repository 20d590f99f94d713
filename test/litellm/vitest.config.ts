import { defineConfig } from 'vitest/config';

// litellm's check (make test-litellm) runs apart from `make test`: it needs .venv-litellm
// (scripts/stack/install-litellm.sh, ~310 MB), so its file is *.check.ts, outside the main
// suite's test/**/*.test.ts.
export default defineConfig({
  test: {
    include: ['test/litellm/**/*.check.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
