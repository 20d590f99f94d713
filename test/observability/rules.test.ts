/**
 * The alert rules and the Prometheus config as promtool sees them: the rules parse, the
 * config (with its rule file) is valid, and every alert's unit tests in alerts.test.yml pass.
 */
import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { renderPrometheusConfig, targetsFromEnv } from '../../deploy/prometheus/render.js';
import { prometheusDir, promtool } from './prometheus-tools.js';

interface RuleFile {
  groups: Array<{ rules: Array<{ alert?: string }> }>;
}

describe('deploy/prometheus with promtool', () => {
  it('promtool check rules: alerts.yml is valid', () => {
    expect(promtool(['check', 'rules', 'alerts.yml'])).toMatch(/SUCCESS: 13 rules found/);
  });

  it('promtool check config: prometheus.yml, its rule file and its metrics token path are valid', () => {
    // The authz job's credentials_file is `make up`'s .local/metrics-token, two folders up: in a
    // copy laid out the same way it exists, whether or not `make up` ever ran here.
    const root = mkdtempSync(join(tmpdir(), 'ctg-prom-'));
    try {
      const dir = join(root, 'deploy/prometheus');
      mkdirSync(dir, { recursive: true });
      mkdirSync(join(root, '.local'));
      writeFileSync(join(root, '.local/metrics-token'), 'a'.repeat(64));
      for (const file of ['prometheus.yml', 'alerts.yml']) copyFileSync(join(prometheusDir, file), join(dir, file));
      expect(promtool(['check', 'config', join(dir, 'prometheus.yml')])).toMatch(/is valid/);
      rmSync(join(root, '.local/metrics-token'));
      expect(() => promtool(['check', 'config', join(dir, 'prometheus.yml')])).toThrow(/metrics-token/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('promtool test rules: alerts.test.yml passes', () => {
    expect(promtool(['test', 'rules', 'alerts.test.yml'])).toMatch(/SUCCESS/);
  });

  it('every alert has a unit test that expects it to fire', () => {
    const alerts = (parse(readFileSync(join(prometheusDir, 'alerts.yml'), 'utf8')) as RuleFile).groups
      .flatMap((group) => group.rules.map((rule) => rule.alert))
      .filter((name): name is string => !!name);
    const tests = parse(readFileSync(join(prometheusDir, 'alerts.test.yml'), 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const firing = new Set(tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect(alerts.length).toBe(13);
    expect(alerts.filter((name) => !firing.has(name))).toEqual([]);
  });

  it('a broken alert fails promtool test rules (the tests can fail)', () => {
    // The same rules with the error-ratio threshold raised past the tested 10%: its test must fail.
    const dir = mkdtempSync(join(tmpdir(), 'ctg-rules-'));
    try {
      const rules = readFileSync(join(prometheusDir, 'alerts.yml'), 'utf8');
      writeFileSync(join(dir, 'alerts.yml'), rules.replace('> 0.05', '> 0.5'));
      copyFileSync(join(prometheusDir, 'alerts.test.yml'), join(dir, 'alerts.test.yml'));
      expect(() => promtool(['test', 'rules', join(dir, 'alerts.test.yml')])).toThrow(/alertname: GatewayErrorRatioHigh/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a copy rendered for other ports (render.ts) points each job there and still passes promtool check config', () => {
    const targets = targetsFromEnv({ ENVOY_ADMIN_PORT: '19901', AUTHZ_METRICS_PORT: '19192', EMBEDDER_PORT: '18081' });
    expect(targets).toEqual({ envoy: '127.0.0.1:19901', authz: '127.0.0.1:19192', embedder: '127.0.0.1:18081' });
    const dir = mkdtempSync(join(tmpdir(), 'ctg-prom-'));
    try {
      const metricsTokenFile = join(dir, 'metrics-token');
      writeFileSync(metricsTokenFile, 'a'.repeat(64));
      const rendered = renderPrometheusConfig(targets, { interval: '5s', metricsTokenFile });
      const config = parse(rendered) as {
        global: Record<string, string>;
        scrape_configs: Array<{
          job_name: string;
          static_configs: Array<{ targets: string[] }>;
          authorization?: { credentials_file: string };
        }>;
      };
      expect(config.scrape_configs.find((job) => job.job_name === 'authz')!.authorization).toEqual({ credentials_file: metricsTokenFile });
      expect(Object.fromEntries(config.scrape_configs.map((job) => [job.job_name, job.static_configs[0]!.targets]))).toEqual({
        envoy: ['127.0.0.1:19901'],
        authz: ['127.0.0.1:19192'],
        embedder: ['127.0.0.1:18081'],
      });
      expect(config.global.scrape_interval).toBe('5s');
      writeFileSync(join(dir, 'prometheus.yml'), rendered);
      expect(promtool(['check', 'config', join(dir, 'prometheus.yml')])).toMatch(/SUCCESS: 1 rule files found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
