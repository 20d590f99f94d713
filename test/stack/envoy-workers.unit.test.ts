/**
 * How many worker threads the local stack's Envoy runs (ENVOY_CONCURRENCY): one per four cores,
 * at least one, unless the variable says otherwise; never Envoy's own default of one per core.
 */
import { describe, expect, it } from 'vitest';
import { usableCores } from '../../contract/usable-cores.js';
import { envoyComponent, localEnvoyWorkers } from '../../scripts/stack/components.js';
import { localComponents } from '../../scripts/stack/local-stack.js';
import { upSettings } from '../../scripts/stack/settings.js';

const placement = {
  binary: 'envoy',
  configFile: '/tmp/envoy.yaml',
  adminPort: 9901,
  gatewayHost: '127.0.0.1',
  gatewayPort: 8443,
  logFile: '/tmp/envoy.log',
};

/** The value after `--concurrency` in a component's arguments. */
function workersIn(args: readonly string[]): number {
  const at = args.indexOf('--concurrency');
  expect(at).toBeGreaterThan(-1);
  return Number(args[at + 1]);
}

describe('the local Envoy worker count', () => {
  it('is one per four cores, at least one', () => {
    expect([1, 2, 3, 4, 6, 8, 16, 64].map((cores) => localEnvoyWorkers(cores))).toEqual([1, 1, 1, 1, 2, 2, 4, 16]);
  });

  it('is always passed to Envoy: the default for this machine, or what the placement names', () => {
    expect(workersIn(envoyComponent(placement).args)).toBe(localEnvoyWorkers(usableCores()));
    expect(workersIn(envoyComponent({ ...placement, concurrency: 3 }).args)).toBe(3);
  });

  it('make up takes ENVOY_CONCURRENCY when set, and refuses a value that is not a positive whole number', () => {
    const unset = upSettings({ STACK_DIR: '/tmp/ctg-workers', MODEL_ID: 'm1' });
    expect(unset.envoyConcurrency).toBeUndefined();
    expect(workersIn(localComponents(unset).envoy.args)).toBe(localEnvoyWorkers());
    const set = upSettings({ STACK_DIR: '/tmp/ctg-workers', MODEL_ID: 'm1', ENVOY_CONCURRENCY: '2' });
    expect(workersIn(localComponents(set).envoy.args)).toBe(2);
    for (const bad of ['0', '-1', 'two', '1.5']) {
      expect(() => upSettings({ STACK_DIR: '/tmp/ctg-workers', MODEL_ID: 'm1', ENVOY_CONCURRENCY: bad })).toThrow(/ENVOY_CONCURRENCY/);
    }
  });
});
