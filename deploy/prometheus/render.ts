/**
 * Renders deploy/prometheus/prometheus.yml for a stack on other ports: same jobs, paths and
 * alert rules, each job's target replaced. The committed file holds the local defaults; `make
 * up` on other ports and the tests render a copy with this.
 *
 * CLI: `npx tsx deploy/prometheus/render.ts <out.yml>`, reading ENVOY_ADMIN_PORT,
 * AUTHZ_METRICS_HOST, AUTHZ_METRICS_PORT, EMBEDDER_HOST, EMBEDDER_PORT and METRICS_TOKEN_FILE
 * from the environment (the stack's own variables, with their declared defaults: contract/settings.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse, stringify } from 'yaml';
import { EnvReader, type Env } from '../../contract/env.js';

export const prometheusDir = fileURLToPath(new URL('.', import.meta.url));

/** host:port of each job's target. */
export interface ScrapeTargets {
  readonly envoy: string;
  readonly authz: string;
  readonly embedder: string;
}

export interface RenderOptions {
  /** Scrape and rule evaluation interval (the committed file says 15s). */
  readonly interval?: string;
  /** The bearer token file for authz's /metrics (default: the committed path, made absolute). */
  readonly metricsTokenFile?: string;
}

interface Config {
  global: Record<string, unknown>;
  rule_files: string[];
  scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }>; authorization?: { credentials_file: string } }>;
}

/** The committed config with each job pointed at `targets` and the rule files made absolute. */
export function renderPrometheusConfig(targets: ScrapeTargets, options: RenderOptions = {}): string {
  const config = parse(readFileSync(join(prometheusDir, 'prometheus.yml'), 'utf8')) as Config;
  for (const job of config.scrape_configs) {
    const target = targets[job.job_name as keyof ScrapeTargets];
    if (target === undefined) throw new Error(`prometheus.yml has a job with no target given: ${job.job_name}`);
    job.static_configs = [{ targets: [target] }];
    // The copy lives elsewhere: a relative credentials file would be read from there.
    if (job.authorization)
      job.authorization.credentials_file = resolve(prometheusDir, options.metricsTokenFile ?? job.authorization.credentials_file);
  }
  if (options.interval) {
    config.global.scrape_interval = options.interval;
    config.global.evaluation_interval = options.interval;
  }
  // The copy lives elsewhere; its rule files must still be these.
  config.rule_files = config.rule_files.map((file) => join(prometheusDir, file));
  return stringify(config);
}

/** Targets from the stack's variables, with their declared defaults; throws a ConfigError naming each bad one. */
export function targetsFromEnv(env: Env): ScrapeTargets {
  const read = new EnvReader(env);
  const port = (name: 'ENVOY_ADMIN_PORT' | 'AUTHZ_METRICS_PORT' | 'EMBEDDER_PORT') => read.integer(name, 0, 65535);
  return read.finish('Prometheus', {
    envoy: `127.0.0.1:${port('ENVOY_ADMIN_PORT')}`,
    authz: `${read.string('AUTHZ_METRICS_HOST')}:${port('AUTHZ_METRICS_PORT')}`,
    embedder: `${read.string('EMBEDDER_HOST')}:${port('EMBEDDER_PORT')}`,
  });
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: tsx deploy/prometheus/render.ts <out.yml>');
    process.exit(2);
  }
  mkdirSync(dirname(resolve(out)), { recursive: true });
  const named = new EnvReader(process.env).optional('METRICS_TOKEN_FILE');
  const metricsTokenFile = named !== undefined ? resolve(named) : undefined;
  writeFileSync(out, renderPrometheusConfig(targetsFromEnv(process.env), metricsTokenFile ? { metricsTokenFile } : {}));
}
