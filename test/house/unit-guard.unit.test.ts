/**
 * The unit tier keeps its promise: a *.unit.test.ts (make check) cannot start a process, a thread
 * or a server, or open a connection, because both vitest configs run it behind the guard; this
 * file, a unit test itself, tries each and must be refused.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { connect } from 'node:tls';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import unitConfig from '../../vitest.unit.config.js';
import wholeConfig from '../../vitest.config.js';
import { UnitTestBoundaryError } from '../support/unit-guard.js';

describe('a unit test', () => {
  it.each([
    ['spawn', () => spawn('true')],
    ['spawnSync', () => spawnSync('true')],
    ['execFileSync', () => execFileSync('git', ['--version'])],
    ['a connection', () => new Socket().connect(6379, '127.0.0.1')],
    ['a TLS connection', () => connect(443, 'localhost')],
    ['a server', () => createServer().listen(0)],
    ['a thread', () => new Worker('process.exit(0)', { eval: true })],
  ])('is refused %s', (_, attempt) => {
    expect(attempt).toThrow(UnitTestBoundaryError);
  });

  it('runs behind the guard under make check and make test alike', () => {
    expect(unitConfig.test?.include).toEqual(['test/**/*.unit.test.ts']);
    expect(unitConfig.test?.setupFiles).toEqual(['test/support/unit-setup.ts']);
    // make test's lanes (vitest.config.ts): each behind the guard, and `stack` takes every file the others do not.
    const lanes = (wholeConfig.test?.projects ?? []) as Array<{ test: { name: string; include: string[]; setupFiles: string[] } }>;
    expect(lanes.map((l) => l.test.name)).toEqual(['stack', 'static', 'fleet', 'timing']);
    for (const lane of lanes) expect(lane.test.setupFiles, lane.test.name).toEqual(['test/support/unit-setup.ts']);
    expect(lanes[0]?.test.include).toEqual(['test/**/*.test.ts']);
  });
});
