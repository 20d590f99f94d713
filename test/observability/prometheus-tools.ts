/**
 * Prometheus and promtool for the observability tests: installed by
 * scripts/install-prometheus.sh when missing (once per process), like Envoy for the e2e tests.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { prometheusDir } from '../../deploy/prometheus/render.js';
import { repoRoot } from '../support/stack.js';

export { prometheusDir };
let binDir: string | undefined;

/** The directory holding `prometheus` and `promtool`. */
export function prometheusBinDir(): string {
  binDir ??= execFileSync('bash', [join(repoRoot, 'scripts/install-prometheus.sh')], { encoding: 'utf8' }).trim();
  return binDir;
}

/** Runs promtool with `args`; resolves with its output, throws with it on a non-zero exit. */
export function promtool(args: readonly string[]): string {
  try {
    return execFileSync(join(prometheusBinDir(), 'promtool'), [...args], {
      cwd: prometheusDir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
  }
}
