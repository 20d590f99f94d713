import { defineConfig } from 'vitest/config';

/**
 * The suite in four lanes (scripts/test/lanes.ts runs them for `make test`):
 * - `timing`: files whose checks bound a time, a latency ratio or a window under faults. They
 *   run last, one at a time, with nothing else of the suite beside them.
 * - `fleet`: the fleet rehearsals (about 3 minutes, and 40 s on a Redis Cluster: its own namespaces and Redis nodes, a few
 *   requests a second), beside `static` and `stack`; its bounds were measured at load 19–27.
 * - `static`: files that start no gateway stack of their own, or start it through `make` on
 *   fixed names (renders, linters, make targets, the admin service, the contract). They run one
 *   at a time beside `stack`.
 * - `stack`: every other file, one at a time, each starting its own stack on free ports, its own
 *   Redis user and key prefix.
 * So at most three files run at once (one of `fleet`, `static` and `stack` each: on 2 cores the
 * suite alone kept about half a core busy), and never beside a timing file. `npx vitest run` runs the
 * lanes one file at a time, as before.
 */
const FLEET_FILES = ['test/fleet/**/*.test.ts'];

const TIMING_FILES = [
  'test/pressure/**/*.test.ts',
  'test/e2e/availability.test.ts',
  'test/e2e/early-replies.test.ts',
  'test/e2e/fairness.test.ts',
  'test/e2e/floods.test.ts',
  'test/e2e/retry-after.test.ts',
  'test/e2e/usage-faults.test.ts',
  'test/embedder/tenant-scheduling.test.ts',
  'test/authz/admission.test.ts',
  'test/authz/check-flood.test.ts',
  'test/contract/redis-deadline.test.ts',
];

const STATIC_FILES = [
  'test/**/*.unit.test.ts',
  'test/house/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/admin/**/*.test.ts',
  'test/contract/**/*.test.ts',
  'test/openapi/**/*.test.ts',
  'test/stack/**/*.test.ts',
  'test/e2e/make-up.test.ts',
];

/** What every lane shares. */
const common = {
  // The *.unit.test.ts files run behind the unit guard here too (test/support/unit-guard.ts).
  setupFiles: ['test/support/unit-setup.ts'],
  fileParallelism: false,
  // Integration and end-to-end suites start real processes (Redis, gRPC servers, Envoy,
  // onnxruntime sessions) and get generous hook timeouts for process start-up.
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    projects: [
      {
        test: {
          ...common,
          name: 'stack',
          include: ['test/**/*.test.ts'],
          exclude: [...TIMING_FILES, ...STATIC_FILES, ...FLEET_FILES],
          sequence: { groupOrder: 1 },
        },
      },
      { test: { ...common, name: 'static', include: STATIC_FILES, exclude: TIMING_FILES, sequence: { groupOrder: 1 } } },
      { test: { ...common, name: 'fleet', include: FLEET_FILES, sequence: { groupOrder: 1 } } },
      { test: { ...common, name: 'timing', include: TIMING_FILES, sequence: { groupOrder: 2 } } },
    ],
  },
});
