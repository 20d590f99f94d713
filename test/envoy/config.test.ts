import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';
import { localReplies } from '../../envoy/local-replies.js';
import { catalogue, PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { envoyBinary, makeStackDir, removeStackDir } from '../support/stack.js';

const dirs = makeStackDir();
const settings = settingsFromEnv({ TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile });
const rendered = renderEnvoyConfig(settings);
const bootstrap = parse(rendered);
const listener = bootstrap.static_resources.listeners[0];
const hcm = listener.filter_chains[0].filters[0].typed_config;
const config = bootstrap;
const scratch = mkdtempSync(join(tmpdir(), 'ctg-envoy-'));

afterAll(() => {
  removeStackDir(dirs);
  rmSync(scratch, { recursive: true, force: true });
});

describe('the Envoy bootstrap', () => {
  it('passes `envoy --mode validate` (the real Envoy 1.40 binary)', () => {
    const file = join(scratch, 'envoy.yaml');
    writeFileSync(file, rendered);
    const version = execFileSync(envoyBinary(), ['--version'], { encoding: 'utf8' });
    expect(version).toMatch(/\/1\.40\.\d+\//);
    const out = execFileSync(envoyBinary(), ['--mode', 'validate', '-c', file, '--disable-hot-restart'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toContain('OK');
  });

  it('uses the default ports of the agreed interface, admin on loopback only', () => {
    expect(listener.address.socket_address).toEqual({ address: '0.0.0.0', port_value: 8443 });
    // Dual-stack by default; GATEWAY_HOST_V6='' listens on IPv4 only.
    expect(listener.additional_addresses).toEqual([{ address: { socket_address: { address: '::', port_value: 8443 } } }]);
    const v4only = parse(
      renderEnvoyConfig(settingsFromEnv({ TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile, GATEWAY_HOST_V6: '' })),
    );
    expect(v4only.static_resources.listeners[0].additional_addresses).toEqual([]);
    expect(() => settingsFromEnv({ GATEWAY_HOST_V6: 'localhost' })).toThrow(/GATEWAY_HOST_V6/);
    expect(bootstrap.admin.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 9901 });
    const endpoint = (name: string) =>
      bootstrap.static_resources.clusters.find((c: any) => c.name === name).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address
        .socket_address;
    expect(endpoint('embedder')).toEqual({ address: '127.0.0.1', port_value: 8081 });
    expect(endpoint('authz')).toEqual({ address: '127.0.0.1', port_value: 9191 });
  });

  it('bounds the Checks outstanding at authz (AUTHZ_MAX_CHECKS), so the excess is refused at once', () => {
    const breaker = (config: any) => config.static_resources.clusters.find((c: any) => c.name === 'authz').circuit_breakers.thresholds[0];
    expect(breaker(bootstrap)).toMatchObject({ max_requests: 512, max_retries: 256 });
    const env = { TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile, AUTHZ_MAX_CHECKS: '32' };
    expect(breaker(parse(renderEnvoyConfig(settingsFromEnv(env))))).toMatchObject({ max_requests: 32 });
    expect(() => settingsFromEnv({ ...env, AUTHZ_MAX_CHECKS: '0' })).toThrow(/AUTHZ_MAX_CHECKS/);
  });

  it('gives the embeddings route a timeout long enough for the largest request, configurable', () => {
    const route = (config: any) =>
      config.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes.find(
        (r: any) => r.name === 'embeddings',
      ).route;
    expect(route(bootstrap)).toMatchObject({ timeout: '600s', idle_timeout: '600s' });
    const shorter = parse(
      renderEnvoyConfig(
        settingsFromEnv({
          TLS_CERT_FILE: dirs.certFile,
          TLS_KEY_FILE: dirs.keyFile,
          EMBEDDER_TIMEOUT_S: '90',
        }),
      ),
    );
    expect(route(shorter)).toMatchObject({ timeout: '90s', idle_timeout: '90s' });
    expect(() => settingsFromEnv({ EMBEDDER_TIMEOUT_S: '0' })).toThrow(/EMBEDDER_TIMEOUT_S/);
  });

  it('serves TLS 1.2+ with ALPN h2 and http/1.1', () => {
    const tls = bootstrap.static_resources.listeners[0].filter_chains[0].transport_socket.typed_config.common_tls_context;
    expect(tls.tls_params.tls_minimum_protocol_version).toBe('TLSv1_2');
    expect(tls.alpn_protocols).toEqual(['h2', 'http/1.1']);
    expect(tls.tls_certificates[0].certificate_chain.filename).toBe(dirs.certFile);
  });

  it('runs the filters in order: identity-header strip, request-id rule, new-key budget, ext_authz on headers, body drain and limit, router', () => {
    expect(hcm.http_filters.map((f: any) => f.name)).toEqual([
      'envoy.filters.http.header_mutation',
      'envoy.filters.http.lua',
      'known_keys',
      'new_keys',
      'envoy.filters.http.ext_authz',
      'drain_body',
      'envoy.filters.http.buffer',
      'envoy.filters.http.router',
    ]);
    // drain_body has no code of its own: it runs only where a route gives it some.
    expect(hcm.http_filters[5].typed_config.default_source_code).toBeUndefined();
    const extAuthz = hcm.http_filters[4].typed_config;
    expect(extAuthz.failure_mode_allow).toBe(false);
    expect(extAuthz.status_on_error.code).toBe('ServiceUnavailable');
    // No body reaches authz, and no body is buffered before it answers.
    expect(extAuthz.with_request_body).toBeUndefined();
    // Past authz's own Redis timeout (0.5 s), so a CPU-limited authz gets to answer a burst.
    expect(extAuthz.grpc_service.timeout).toBe('2s');
    expect(hcm.http_filters[6].typed_config.max_request_bytes).toBe(1048576);
  });

  it('bounds what an early refusal reads: an HTTP/2 body up to 8 KiB before any decision, a refused one up to 4 MiB only with a key', () => {
    const lua = hcm.http_filters[1].typed_config.default_source_code.inline_string as string;
    // Within the per-connection buffer, so waiting for the body can never make Envoy answer 413.
    expect(lua).toContain('length <= 8192');
    expect(lua).toContain('protocol() == "HTTP/2"');
    expect(listener.per_connection_buffer_limit_bytes).toBeGreaterThanOrEqual(8192);
    const routes = hcm.route_config.virtual_hosts[0].routes as any[];
    const tooLarge = routes.find((r) => r.name === 'embeddings_too_large');
    // Before the embeddings route, and ext_authz stays on: only a key authz accepted is read.
    expect(routes.indexOf(tooLarge)).toBeLessThan(routes.findIndex((r) => r.name === 'embeddings'));
    expect(tooLarge.typed_per_filter_config['envoy.filters.http.ext_authz']).toBeUndefined();
    expect(tooLarge.match.headers).toContainEqual({ name: 'content-length', range_match: { start: 1048577, end: 4194305 } });
    expect(tooLarge.direct_response.status).toBe(413);
    expect(tooLarge.typed_per_filter_config.drain_body.source_code.inline_string).toContain('setBytes("")');
  });

  it('bounds what a client can hold: timeouts, header and stream limits, buffers, heap', () => {
    expect(hcm).toMatchObject({
      request_headers_timeout: '10s',
      request_timeout: '60s',
      stream_idle_timeout: '30s',
      max_request_headers_kb: 64,
      common_http_protocol_options: { idle_timeout: '60s', max_headers_count: 128 },
      http2_protocol_options: { max_concurrent_streams: 100, initial_stream_window_size: 65536 },
    });
    expect(listener.per_connection_buffer_limit_bytes).toBe(32768);
    expect(listener.filter_chains[0].transport_socket_connect_timeout).toBe('10s');
    const monitors = config.overload_manager.resource_monitors.map((m: any) => m.name);
    expect(monitors).toEqual(['envoy.resource_monitors.global_downstream_max_connections', 'envoy.resource_monitors.fixed_heap']);
    expect(config.overload_manager.actions.map((a: any) => a.name)).toContain('envoy.overload_actions.stop_accepting_requests');
  });

  it('every problem body Envoy can send is the catalogue entry, with the problem content type', () => {
    const mappers = hcm.local_reply_config.mappers as any[];
    expect(mappers).toHaveLength(Object.keys(localReplies).length);
    for (const mapper of mappers) {
      const body = JSON.parse(mapper.body_format_override.text_format_source.inline_string);
      const entry = catalogue.get(body.code);
      expect(entry, body.code).toBeDefined();
      expect(body).toMatchObject({ type: 'about:blank', status: entry!.status, title: entry!.title });
      expect(typeof body.detail).toBe('string');
      expect(mapper.status_code ?? body.status).toBe(body.status);
      expect(mapper.body_format_override.content_type).toBe(PROBLEM_CONTENT_TYPE);
    }
  });

  it('reports every bad setting at once, naming each variable', () => {
    expect(() => settingsFromEnv({ GATEWAY_PORT: 'x', EMBEDDER_HOST: 'not a host', AUTHZ_TIMEOUT_MS: '0' })).toThrow(
      /GATEWAY_PORT[\s\S]*EMBEDDER_HOST[\s\S]*AUTHZ_TIMEOUT_MS/,
    );
  });

  it('refuses a template placeholder it does not know', () => {
    expect(() => renderEnvoyConfig(settings, 'port: {{NOT_A_SETTING}}')).toThrow(/NOT_A_SETTING/);
  });
});
