// The setup file of both vitest configs: every *.unit.test.ts runs behind the unit guard, under
// `make check` and under `make test` alike, so a unit test that starts a process fails in both.
import { afterAll, expect } from 'vitest';
import { installUnitGuard } from './unit-guard.js';

if (expect.getState().testPath?.endsWith('.unit.test.ts')) afterAll(installUnitGuard());
