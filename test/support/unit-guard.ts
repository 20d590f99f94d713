/**
 * What makes a unit test a unit test (`*.unit.test.ts`, run by `make check`): it starts no
 * process, thread or server and opens no connection, so it needs no Redis, no stack and no
 * installed model, and its outcome depends only on the code. `vitest.unit.config.ts` installs
 * this guard before every unit file: any such call throws, naming what was tried, and the test
 * that made it fails. Everything else is an integration test (`*.test.ts`, run by `make test`).
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';
import workerThreads from 'node:worker_threads';

/** The error a unit test gets for what it may not do. */
export class UnitTestBoundaryError extends Error {
  constructor(what: string) {
    super(`a unit test (*.unit.test.ts) may not ${what}: name the file *.test.ts, or test the pure part`);
    this.name = 'UnitTestBoundaryError';
  }
}

type Patch = [target: Record<string, unknown>, name: string, what: string];

const PATCHES: readonly Patch[] = [
  ...['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'].map(
    (name): Patch => [childProcess as unknown as Record<string, unknown>, name, `start a process (child_process.${name})`],
  ),
  [net.Socket.prototype as unknown as Record<string, unknown>, 'connect', 'open a connection (net.Socket.connect)'],
  [net.Server.prototype as unknown as Record<string, unknown>, 'listen', 'listen on a port (net.Server.listen)'],
  [tls as unknown as Record<string, unknown>, 'connect', 'open a connection (tls.connect)'],
  [workerThreads as unknown as Record<string, unknown>, 'Worker', 'start a thread (worker_threads.Worker)'],
];

/** Replaces every call a unit test may not make with one that throws; returns what puts them back. */
export function installUnitGuard(): () => void {
  const saved = PATCHES.map(([target, name]) => target[name]);
  for (const [target, name, what] of PATCHES) {
    target[name] = function refused() {
      throw new UnitTestBoundaryError(what);
    };
  }
  // `import { spawn } from 'node:child_process'` binds the module's named export: update those too.
  syncBuiltinESMExports();
  return () => {
    PATCHES.forEach(([target, name], i) => {
      target[name] = saved[i];
    });
    syncBuiltinESMExports();
  };
}
