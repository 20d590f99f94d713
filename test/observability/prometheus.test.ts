/**
 * A real Prometheus (Debian's package) scraping a real stack (Envoy, authz, the embedder with
 * the generated test model) with the committed prometheus.yml and alerts.yml: every target is
 * up, the key series move by exactly the traffic sent, the alert rules load and evaluate, every
 * dashboard and alert query reads only series the live endpoints expose and evaluates in
 * Prometheus, and a canary sentence sent through every kind of reply is in no label.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { waitFor } from '../support/process.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import { prometheusDir } from './prometheus-tools.js';
import { startPrometheus, type RunningPrometheus } from './prometheus-server.js';
import { exposedNames, metricNames } from './promql-names.js';
import Fastify from 'fastify';
import { registerAdminMetrics } from '../../admin/src/http/metrics.js';
import { fixedSecret } from '../../contract/secrets.js';

const CANARY = `Zebracanary ${randomBytes(4).toString('hex')} reports quixotic dyspnoea`;
// Generous: the 2-core machine is shared, and each series needs a scrape (1 s) after the traffic.
const SERIES_BOUND_MS = 30_000;
const GW = 'envoy_http_conn_manager_prefix="gateway"';
/** Series Prometheus makes itself for every target; no exporter serves them. */
const SYNTHETIC = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);

let stack: Stack;
let prometheus: RunningPrometheus;
let key: CreatedKey;

beforeAll(async () => {
  stack = await startStack(join(repoRoot, '.local/models/test'));
  key = orgWithKey(stack, 'obs');
  prometheus = await startPrometheus(stack);
}, 180_000);

afterAll(async () => {
  await prometheus?.process.stop();
  await stack?.stop();
});

const embed = (input: unknown, authorization = `Bearer ${key.key}`) =>
  stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ model: stack.svc.modelId, input }),
  });

// authz's and the embedder's /metrics answer only with the stack's metrics token; Envoy's admin ignores the header.
const metricsAuth = (): RequestInit => ({
  headers: { authorization: `Bearer ${readFileSync(stack.dirs.metricsTokenFile, 'utf8').trim()}` },
});

/** The admin listener's exposition (the budget gauges), from its own registry: no admin server runs in this stack. */
async function adminExposition(): Promise<string> {
  const app = Fastify();
  registerAdminMetrics(
    app,
    { listBudgets: async () => ({ budgets: [] }) } as never,
    fixedSecret('admin-metrics-test-token-0123456789abcdef'),
  );
  const res = await app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: 'Bearer admin-metrics-test-token-0123456789abcdef' },
  });
  await app.close();
  return res.body;
}

async function liveNames(): Promise<Set<string>> {
  const urls = [
    `http://127.0.0.1:${stack.ports.admin}/stats/prometheus`,
    `http://127.0.0.1:${stack.ports.authzMetrics}/metrics`,
    `http://127.0.0.1:${stack.ports.embedder}/metrics`,
  ];
  const names = new Set(SYNTHETIC);
  for (const url of urls) for (const name of exposedNames(await (await fetch(url, metricsAuth())).text())) names.add(name);
  for (const name of exposedNames(await adminExposition())) names.add(name);
  return names;
}

/** Every PromQL query of the dashboard ($__rate_interval as 1m) and of the alert rules. */
function committedQueries(): Array<{ where: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(join(repoRoot, 'deploy/grafana/gateway.json'), 'utf8')) as {
    panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
  };
  const panels = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((t) => ({ where: `panel "${panel.title}"`, expr: t.expr.replaceAll('$__rate_interval', '1m') })),
  );
  const rules = parse(readFileSync(join(prometheusDir, 'alerts.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  const alerts = rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
  return [...panels, ...alerts];
}

describe('Prometheus against the running stack', () => {
  it(
    'scrapes every target of prometheus.yml, and each is up',
    async () => {
      type Targets = { activeTargets: Array<{ labels: { job: string }; health: string; lastError: string }> };
      let last: Targets | undefined;
      await waitFor(
        'every target to be up',
        async () => {
          last = await prometheus.api<Targets>('targets', { state: 'active' });
          return last.activeTargets.length === 3 && last.activeTargets.every((t) => t.health === 'up');
        },
        SERIES_BOUND_MS,
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(last)}`);
      });
      expect(last!.activeTargets.map((t) => t.labels.job).sort()).toEqual(['authz', 'embedder', 'envoy']);
    },
    SERIES_BOUND_MS + 5_000,
  );

  it(
    'the key series of every hop move by exactly the traffic sent',
    async () => {
      const watched: Record<string, string> = {
        edge2xx: `sum(envoy_http_downstream_rq_xx{${GW},envoy_response_code_class="2"})`,
        edge4xx: `sum(envoy_http_downstream_rq_xx{${GW},envoy_response_code_class="4"})`,
        extAuthzOk: `sum(envoy_http_ext_authz_ok{${GW}})`,
        allowed: 'sum(authz_checks_total{outcome="allowed"})',
        denied: 'sum(authz_checks_total{outcome="denied"})',
        checkLimits: 'sum(authz_redis_command_duration_seconds_count{command="checkLimits"})',
        admitted: 'sum(embedder_settlement_calls_total{operation="admit",outcome="ok"})',
        usageWrites: 'sum(embedder_usage_writes_total)',
        served: 'sum(embedder_requests_total{route="/v1/embeddings",status="200"})',
        inputs: 'sum(embedder_inputs_total)',
        batches: 'sum(embedder_batch_size_count)',
      };
      const expected: Record<string, number> = {
        edge2xx: 3,
        edge4xx: 1,
        extAuthzOk: 3,
        allowed: 3,
        denied: 1,
        checkLimits: 3,
        admitted: 3,
        usageWrites: 3,
        served: 3,
        inputs: 4,
        batches: 3,
      };
      // A baseline from a scrape that has happened (every target has its first samples in).
      await waitFor(
        'a first scrape of authz',
        async () => (await prometheus.api<{ result: unknown[] }>('query', { query: 'authz_checks_total' })).result.length > 0,
        SERIES_BOUND_MS,
      );
      const before: Record<string, number> = {};
      for (const [name, query] of Object.entries(watched)) before[name] = await prometheus.scalar(query);

      for (const input of ['Patient denies chest pain.', ['Afebrile.', 'Stable.'], 'Discharged home.'])
        expect((await embed(input)).status).toBe(200);
      expect((await embed('x', `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`)).status).toBe(401);

      const moved: Record<string, number> = {};
      await waitFor(
        'the series to reach the traffic sent',
        async () => {
          for (const [name, query] of Object.entries(watched)) moved[name] = (await prometheus.scalar(query)) - before[name]!;
          return Object.entries(expected).every(([name, value]) => moved[name] === value);
        },
        SERIES_BOUND_MS,
      ).catch(() => undefined);
      expect(moved).toEqual(expected);
    },
    2 * SERIES_BOUND_MS + 10_000,
  );

  it(
    'loads every alert rule from alerts.yml, and each evaluates without error',
    async () => {
      type Rules = { groups: Array<{ rules: Array<{ name: string; type: string; health: string; lastError?: string }> }> };
      let rules: Rules['groups'][number]['rules'] = [];
      // As many as alerts.yml holds (the wait once counted 11 of 13, so it always ran out its 30 s).
      const committed = committedQueries().filter((q) => q.where.startsWith('alert ')).length;
      expect(committed).toBeGreaterThanOrEqual(13);
      await waitFor(
        'every rule to be evaluated',
        async () => {
          rules = (await prometheus.api<Rules>('rules')).groups.flatMap((g) => g.rules);
          return rules.length === committed && rules.every((r) => r.health !== 'unknown');
        },
        SERIES_BOUND_MS,
      ).catch(() => undefined);
      expect(rules.filter((r) => r.type !== 'alerting' || r.health !== 'ok')).toEqual([]);
      expect(rules).toHaveLength(committed);
    },
    SERIES_BOUND_MS + 5_000,
  );
});

describe('dashboard and alert queries against the live series', () => {
  it('every query reads only series that the live /metrics endpoints expose', async () => {
    const names = await liveNames();
    const queries = committedQueries();
    expect(queries.length).toBeGreaterThan(30);
    const unknown = queries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((n) => !names.has(n))
        .map((n) => `${where}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });

  it('every query evaluates in Prometheus, and the request panels have data after traffic', async () => {
    for (const { where, expr } of committedQueries()) {
      await expect(prometheus.api('query', { query: expr }), where).resolves.toBeDefined();
    }
    const perClass = await prometheus.api<{ result: unknown[] }>('query', {
      query: `sum by (envoy_response_code_class) (rate(envoy_http_downstream_rq_xx{${GW}}[1m]))`,
    });
    expect(perClass.result.length).toBeGreaterThan(0);
  }, 30_000);

  it('the name check can fail: a misspelt series is caught', async () => {
    const names = await liveNames();
    expect(metricNames('sum(rate(authz_check_total{outcome="allowed"}[1m]))').filter((n) => !names.has(n))).toEqual(['authz_check_total']);
  });
});

describe('canary: request text reaches no metric', () => {
  it('a canary sentence sent through success and error replies is in no exposition and no label value', async () => {
    const replies = [
      await embed(CANARY),
      await embed([CANARY, `${CANARY} again`]),
      await embed(CANARY, `Bearer ${CANARY}`),
      await stack.request({
        method: 'POST',
        path: `/v1/embeddings`,
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: `{"model": "${CANARY}", "input": "${CANARY}"}`,
      }),
      await stack.request({
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: `{"input": ["${CANARY}"], "encoding_format": "${CANARY}"}`,
      }),
      await stack.request({
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'text/plain' },
        body: CANARY,
      }),
      await stack.request({ method: 'GET', path: `/v1/${encodeURIComponent(CANARY)}`, headers: { authorization: `Bearer ${key.key}` } }),
    ];
    expect(replies.map((r) => r.status)).toEqual(expect.arrayContaining([200, 401, 400, 404]));
    const word = CANARY.split(' ')[1]!;
    for (const url of [
      `http://127.0.0.1:${stack.ports.admin}/stats/prometheus`,
      `http://127.0.0.1:${stack.ports.authzMetrics}/metrics`,
      `http://127.0.0.1:${stack.ports.embedder}/metrics`,
    ]) {
      expect(await (await fetch(url, metricsAuth())).text(), url).not.toContain(word);
    }
    // After a scrape, no label of any stored series holds it either.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const labels = await prometheus.api<string[]>('labels');
    for (const label of labels) {
      const values = await prometheus.api<string[]>(`label/${label}/values`);
      expect(
        values.filter((v) => v.includes(word)),
        label,
      ).toEqual([]);
    }
  }, 30_000);
});
