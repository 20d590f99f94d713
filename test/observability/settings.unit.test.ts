/**
 * The observability settings of each component: metrics on loopback by default, tracing off
 * by default and on with one variable (OTEL_EXPORTER_OTLP_ENDPOINT) everywhere, and a bad value
 * named at start-up.
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';
import { renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';

const authzBase = { KEY_HASH_SECRET: 'x'.repeat(40), GRANT_SECRET: 'g'.repeat(40), MODEL_ID: 'm1' };
const embedderBase = { GRANT_SECRET: 'g'.repeat(40) };
const OTLP = 'http://127.0.0.1:4318';

function authzProblems(env: Record<string, string>): string[] {
  try {
    loadAuthzConfig({ ...authzBase, ...env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
}

describe('authz', () => {
  it('serves metrics on 127.0.0.1:9192 and traces nothing by default', () => {
    expect(loadAuthzConfig(authzBase)).toMatchObject({ metricsHost: '127.0.0.1', metricsPort: 9192, otlpEndpoint: undefined });
  });

  it('reads AUTHZ_METRICS_HOST/PORT and OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    expect(
      loadAuthzConfig({ ...authzBase, AUTHZ_METRICS_HOST: '0.0.0.0', AUTHZ_METRICS_PORT: '9464', OTEL_EXPORTER_OTLP_ENDPOINT: OTLP }),
    ).toMatchObject({ metricsHost: '0.0.0.0', metricsPort: 9464, otlpEndpoint: OTLP });
  });

  it('names a bad metrics port or OTLP endpoint', () => {
    const problems = authzProblems({ AUTHZ_METRICS_PORT: '70000', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318/v1/traces' });
    expect(problems.map((p) => p.split(':')[0])).toEqual(['AUTHZ_METRICS_PORT', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
  });
});

describe('embedder', () => {
  const base = { ...embedderBase, MODEL_DIR: '/tmp/model' };
  it('traces nothing by default; OTEL_EXPORTER_OTLP_ENDPOINT turns it on', () => {
    expect(loadEmbedderConfig(base).otlpEndpoint).toBeUndefined();
    expect(loadEmbedderConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: `${OTLP}/` }).otlpEndpoint).toBe(`${OTLP}/`);
  });

  it('names a bad OTLP endpoint', () => {
    expect(() => loadEmbedderConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://x' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });
});

describe('Envoy', () => {
  const tls = { TLS_CERT_FILE: '/tmp/c.pem', TLS_KEY_FILE: '/tmp/k.pem' };
  const hcmOf = (env: Record<string, string>) => {
    const bootstrap = parse(renderEnvoyConfig(settingsFromEnv({ ...tls, ...env })));
    return { bootstrap, hcm: bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config };
  };

  it('has no tracer and no collector cluster by default', () => {
    const { bootstrap, hcm } = hcmOf({});
    expect(hcm.tracing).toBeUndefined();
    expect(bootstrap.static_resources.clusters.map((c: { name: string }) => c.name)).toEqual(['embedder', 'authz']);
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT adds the OpenTelemetry tracer and its cluster', () => {
    const { bootstrap, hcm } = hcmOf({ OTEL_EXPORTER_OTLP_ENDPOINT: OTLP });
    expect(hcm.tracing.provider.name).toBe('envoy.tracers.opentelemetry');
    expect(hcm.tracing.provider.typed_config.http_service.http_uri).toMatchObject({ uri: `${OTLP}/v1/traces`, cluster: 'otlp_collector' });
    const cluster = bootstrap.static_resources.clusters.find((c: { name: string }) => c.name === 'otlp_collector');
    expect(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({
      address: '127.0.0.1',
      port_value: 4318,
    });
  });

  it('resolves a collector given by name (STRICT_DNS); an address is STATIC', () => {
    const cluster = (env: Record<string, string>) =>
      hcmOf(env).bootstrap.static_resources.clusters.find((c: { name: string }) => c.name === 'otlp_collector');
    expect(cluster({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.monitoring:4318' }).type).toBe('STRICT_DNS');
    expect(cluster({ OTEL_EXPORTER_OTLP_ENDPOINT: OTLP }).type).toBe('STATIC');
  });

  it('names an endpoint Envoy cannot use (no port, https, a path)', () => {
    for (const bad of ['http://collector', 'https://collector:4318', 'http://collector:4318/v1/traces']) {
      expect(() => settingsFromEnv({ ...tls, OTEL_EXPORTER_OTLP_ENDPOINT: bad }), bad).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    }
  });
});
