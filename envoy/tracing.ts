/**
 * Envoy's part of the traces: the HCM's OpenTelemetry tracer and the cluster it exports to,
 * rendered into the bootstrap only when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT,
 * the same setting authz and the embedder read). Off by default: then both placeholders
 * render as comments and the bootstrap has no tracer at all.
 *
 * Both are single-line YAML flow mappings, so they fit the template at any indentation.
 * Span tags hold no request text: Envoy never parses the body, the custom tags below are the
 * route name and the TLS version, and they overwrite Envoy's URL and user-agent tags.
 */

/** Where Envoy sends OTLP/HTTP (protobuf) spans: an IPv4 address or a DNS name, and a port. */
export interface OtlpEndpoint {
  readonly host: string;
  readonly port: number;
}

const OTLP_CLUSTER = 'otlp_collector';

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** Parses `http://<host>:<port>[/]` (the OTLP base URL); throws naming the variable otherwise. */
export function parseOtlpEndpoint(raw: string, variable = 'OTEL_EXPORTER_OTLP_ENDPOINT'): OtlpEndpoint {
  const match = /^http:\/\/([A-Za-z0-9.-]+):(\d{1,5})\/?$/.exec(raw);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535)
    throw new Error(`${variable}: must be http://<host>:<port> (an explicit port) for Envoy, got ${JSON.stringify(raw)}`);
  return { host: match[1]!, port };
}

/** The HCM `tracing` entry: every request is a span (a sampled parent's decision is kept). */
export function hcmTracing(endpoint: OtlpEndpoint | undefined): string {
  if (!endpoint) return '# tracing: off (OTEL_EXPORTER_OTLP_ENDPOINT unset)';
  const tracing = {
    provider: {
      name: 'envoy.tracers.opentelemetry',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig',
        http_service: {
          http_uri: { uri: `http://${endpoint.host}:${endpoint.port}/v1/traces`, cluster: OTLP_CLUSTER, timeout: '1s' },
        },
        service_name: 'envoy',
      },
    },
    // One span per upstream call (authz's Check, the embedder), children of the request's span.
    spawn_upstream_span: true,
    custom_tags: [
      { tag: 'route', value: '%ROUTE_NAME%' },
      { tag: 'tls.version', value: '%DOWNSTREAM_TLS_VERSION%' },
      // Envoy's own tags copy the URL (query string included) and the user agent: a client can
      // put any text there, so they are overwritten; the route name says what was called.
      { tag: 'http.url', literal: { value: 'redacted' } },
      { tag: 'user_agent', literal: { value: 'redacted' } },
    ],
  };
  return `tracing: ${JSON.stringify(tracing)}`;
}

/** The cluster the tracer exports to (an entry of `clusters`). */
export function otlpCluster(endpoint: OtlpEndpoint | undefined): string {
  if (!endpoint) return '# no OTLP cluster (tracing off)';
  const cluster = {
    name: OTLP_CLUSTER,
    // A collector is usually a Service name in a cluster, an address on one machine.
    type: IPV4.test(endpoint.host) ? 'STATIC' : 'STRICT_DNS',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: OTLP_CLUSTER,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: endpoint.host, port_value: endpoint.port } } } }] }],
    },
  };
  return `- ${JSON.stringify(cluster)}`;
}
