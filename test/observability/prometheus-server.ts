/**
 * A real Prometheus for the observability tests: deploy/prometheus/prometheus.yml rendered for
 * a test stack's ports by deploy/prometheus/render.ts (same jobs, paths and alert rules; a 1 s
 * scrape and evaluation interval so the test is short), with its TSDB in the stack's temp directory.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderPrometheusConfig } from '../../deploy/prometheus/render.js';
import { freePort, readyOrStopped, startProcess, waitFor, type ManagedProcess } from '../support/process.js';
import type { Stack } from '../support/stack.js';
import { prometheusBinDir } from './prometheus-tools.js';

export interface RunningPrometheus {
  readonly url: string;
  readonly process: ManagedProcess;
  /** GET /api/v1/<path> with `params`; throws unless Prometheus answers status "success". */
  api<T = unknown>(path: string, params?: Record<string, string>): Promise<T>;
  /** The instant value of a query that yields one sample, or 0 when it yields none. */
  scalar(query: string): Promise<number>;
}

/** Starts Prometheus against `stack`; resolves once it is ready. */
export async function startPrometheus(stack: Stack): Promise<RunningPrometheus> {
  const dir = join(stack.dirs.dir, 'prometheus');
  mkdirSync(dir, { recursive: true });
  const targets = {
    envoy: `127.0.0.1:${stack.ports.admin}`,
    authz: `127.0.0.1:${stack.ports.authzMetrics}`,
    embedder: `127.0.0.1:${stack.ports.embedder}`,
  };
  writeFileSync(
    join(dir, 'prometheus.yml'),
    renderPrometheusConfig(targets, { interval: '1s', metricsTokenFile: stack.dirs.metricsTokenFile }),
  );
  const port = await freePort();
  const process = startProcess({
    name: 'prometheus',
    command: join(prometheusBinDir(), 'prometheus'),
    args: [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    env: {},
    logFile: join(stack.dirs.logDir, 'prometheus.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  await readyOrStopped(
    process,
    waitFor('Prometheus to be ready', async () => (await fetch(`${url}/-/ready`)).ok, 30_000, [process]),
  );
  const api = async <T>(path: string, params: Record<string, string> = {}): Promise<T> => {
    const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path} ${JSON.stringify(params)}: ${body.error}`);
    return body.data;
  };
  const scalar = async (query: string): Promise<number> => {
    const data = await api<{ result: Array<{ value: [number, string] }> }>('query', { query });
    if (data.result.length > 1) throw new Error(`${query} yields ${data.result.length} samples`);
    return data.result.length === 0 ? 0 : Number(data.result[0]!.value[1]);
  };
  return { url, process, api, scalar };
}
