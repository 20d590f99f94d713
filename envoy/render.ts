/**
 * Renders envoy/envoy.yaml.tmpl into a bootstrap file. Only ports, certificate paths, upstream
 * addresses, timeouts and the catalogue's problem bodies are substituted.
 *
 * CLI: `npx tsx envoy/render.ts <out.yaml>`, reading GATEWAY_PORT, GATEWAY_HOST,
 * GATEWAY_HOST_V6, ENVOY_ADMIN_PORT, EMBEDDER_HOST, EMBEDDER_PORT, AUTHZ_HOST, AUTHZ_PORT,
 * TLS_CERT_FILE, TLS_KEY_FILE, AUTHZ_TIMEOUT_MS, EMBEDDER_TIMEOUT_S, RETRY_AFTER_SECONDS,
 * REQUEST_TIMEOUT_S, CONNECTION_IDLE_TIMEOUT_S, ENVOY_MAX_CONNECTIONS and ENVOY_MAX_HEAP_MB
 * from the environment; EMBEDDER_ENDPOINTS / AUTHZ_ENDPOINTS (`ip:port,ip:port`) list several
 * replicas instead of one.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { localReplies, localReplyBody } from './local-replies.js';
import { hcmTracing, otlpCluster, parseOtlpEndpoint, type OtlpEndpoint } from './tracing.js';

export const templatePath = fileURLToPath(new URL('./envoy.yaml.tmpl', import.meta.url));

export interface EnvoySettings {
  readonly gatewayHost: string;
  /** Further addresses of the gateway listener (dual-stack: the IPv6 one). */
  readonly gatewayExtraHosts?: readonly string[];
  readonly gatewayPort: number;
  readonly adminPort: number;
  readonly embedderHost: string;
  readonly embedderPort: number;
  readonly authzHost: string;
  readonly authzPort: number;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  /** ext_authz's deadline; past it Envoy fails closed with 503 authorization_unavailable. */
  readonly authzTimeoutMs: number;
  /** Route and idle timeout towards the embedder; past it 503 upstream_unavailable. */
  readonly embedderTimeoutS: number;
  /** retry-after on Envoy's own 503s. */
  readonly retryAfterSeconds: number;
  /** The whole request, body included, must arrive within this many seconds (slow uploads). */
  readonly requestTimeoutS?: number;
  /** A downstream connection with no request in flight is closed after this many seconds. */
  readonly connectionIdleTimeoutS?: number;
  /** Downstream connections Envoy holds at once; past it new ones are refused. */
  readonly maxConnections?: number;
  /** Heap at which the overload actions saturate (timers shrink from 70%, requests stop at 95%). */
  readonly maxHeapBytes?: number;
  /** Several embedder replicas; when absent, the one at embedderHost:embedderPort. */
  readonly embedderEndpoints?: readonly Endpoint[];
  /** Several authz replicas; when absent, the one at authzHost:authzPort. */
  readonly authzEndpoints?: readonly Endpoint[];
  /** Where spans go (OTEL_EXPORTER_OTLP_ENDPOINT); no tracer when absent. */
  readonly otlpEndpoint?: OtlpEndpoint | undefined;
}

/** One upstream replica. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** Defaults of the optional limits; the README's "Security" section measures them. */
export const LIMIT_DEFAULTS = Object.freeze({
  requestTimeoutS: 60,
  connectionIdleTimeoutS: 60,
  maxConnections: 10_000,
  maxHeapBytes: 512 * 1024 * 1024,
});

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
/** IPv6 literals as Envoy takes them in a socket address (no brackets, no zone). */
const IPV6 = /^[0-9a-fA-F:]*:[0-9a-fA-F:.]*$/;

/** Parses settings from an environment map, reporting every bad variable at once. */
export function settingsFromEnv(env: Readonly<Record<string, string | undefined>>): EnvoySettings {
  const errors: string[] = [];
  const port = (name: string, fallback: number): number => {
    const raw = env[name] ?? String(fallback);
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0 || value > 65535) errors.push(`${name} must be a port, got "${raw}"`);
    return value;
  };
  const ip = (name: string, fallback: string): string => {
    const value = env[name] ?? fallback;
    // STATIC clusters and listeners take IP addresses, not names.
    if (!IPV4.test(value)) errors.push(`${name} must be an IPv4 address, got "${value}"`);
    return value;
  };
  const ip6 = (name: string, fallback: string): string[] => {
    const value = env[name] ?? fallback;
    if (value === '') return [];
    if (!IPV6.test(value)) errors.push(`${name} must be an IPv6 address or empty, got "${value}"`);
    return [value];
  };
  const positive = (name: string, fallback: number): number => {
    const raw = env[name] ?? String(fallback);
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1) errors.push(`${name} must be a positive integer, got "${raw}"`);
    return value;
  };
  const file = (name: string, fallback: string): string => resolve(env[name] ?? fallback);
  const endpoints = (name: string): { [key: string]: readonly Endpoint[] } => {
    const raw = env[name];
    if (raw === undefined || raw === '') return {};
    const list = raw.split(',').map((item) => {
      const [host = '', portText = ''] = item.trim().split(':');
      const port = Number(portText);
      if (!IPV4.test(host) || !Number.isInteger(port) || port < 1 || port > 65535) errors.push(`${name} must be ip:port[,ip:port…], got "${item}"`);
      return { host, port };
    });
    return { [name === 'EMBEDDER_ENDPOINTS' ? 'embedderEndpoints' : 'authzEndpoints']: list };
  };
  const settings: EnvoySettings = {
    gatewayHost: ip('GATEWAY_HOST', '0.0.0.0'),
    gatewayPort: port('GATEWAY_PORT', 8443),
    adminPort: port('ENVOY_ADMIN_PORT', 9901),
    embedderHost: ip('EMBEDDER_HOST', '127.0.0.1'),
    embedderPort: port('EMBEDDER_PORT', 8081),
    authzHost: ip('AUTHZ_HOST', '127.0.0.1'),
    authzPort: port('AUTHZ_PORT', 9191),
    tlsCertFile: file('TLS_CERT_FILE', '.local/tls/server.pem'),
    tlsKeyFile: file('TLS_KEY_FILE', '.local/tls/server-key.pem'),
    authzTimeoutMs: positive('AUTHZ_TIMEOUT_MS', 500),
    // The largest valid request (1,000 inputs x 512 tokens) took minutes on 2 shared cores
    // with the default model; the OpenAI SDKs' own default timeout is 10 minutes.
    embedderTimeoutS: positive('EMBEDDER_TIMEOUT_S', 600),
    retryAfterSeconds: positive('RETRY_AFTER_SECONDS', 1),
    // Dual-stack by default; an empty GATEWAY_HOST_V6 listens on IPv4 only.
    gatewayExtraHosts: ip6('GATEWAY_HOST_V6', '::'),
    requestTimeoutS: positive('REQUEST_TIMEOUT_S', LIMIT_DEFAULTS.requestTimeoutS),
    connectionIdleTimeoutS: positive('CONNECTION_IDLE_TIMEOUT_S', LIMIT_DEFAULTS.connectionIdleTimeoutS),
    maxConnections: positive('ENVOY_MAX_CONNECTIONS', LIMIT_DEFAULTS.maxConnections),
    maxHeapBytes: positive('ENVOY_MAX_HEAP_MB', LIMIT_DEFAULTS.maxHeapBytes / 1048576) * 1048576,
    ...endpoints('EMBEDDER_ENDPOINTS'),
    ...endpoints('AUTHZ_ENDPOINTS'),
    otlpEndpoint: otlp(env.OTEL_EXPORTER_OTLP_ENDPOINT, errors),
  };
  if (errors.length > 0) throw new Error(`invalid Envoy settings:\n  ${errors.join('\n  ')}`);
  return Object.freeze(settings);
}

function otlp(raw: string | undefined, errors: string[]): OtlpEndpoint | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    return parseOtlpEndpoint(raw);
  } catch (error) {
    errors.push((error as Error).message);
    return undefined;
  }
}

/** Fills the template; fails on any placeholder it does not know, so none can slip through. */
export function renderEnvoyConfig(settings: EnvoySettings, template = readFileSync(templatePath, 'utf8')): string {
  const values: Record<string, string> = {
    GATEWAY_HOST: settings.gatewayHost,
    GATEWAY_PORT: String(settings.gatewayPort),
    ENVOY_ADMIN_PORT: String(settings.adminPort),
    EMBEDDER_HOST: settings.embedderHost,
    EMBEDDER_PORT: String(settings.embedderPort),
    AUTHZ_HOST: settings.authzHost,
    AUTHZ_PORT: String(settings.authzPort),
    TLS_CERT_FILE: settings.tlsCertFile,
    TLS_KEY_FILE: settings.tlsKeyFile,
    AUTHZ_TIMEOUT: `${settings.authzTimeoutMs / 1000}s`,
    EMBEDDER_TIMEOUT: `${settings.embedderTimeoutS}s`,
    RETRY_AFTER_SECONDS: String(settings.retryAfterSeconds),
    GATEWAY_ADDITIONAL_ADDRESSES: JSON.stringify((settings.gatewayExtraHosts ?? []).map((address) => ({
      address: { socket_address: { address, port_value: settings.gatewayPort } },
    }))),
    REQUEST_TIMEOUT: `${settings.requestTimeoutS ?? LIMIT_DEFAULTS.requestTimeoutS}s`,
    CONNECTION_IDLE_TIMEOUT: `${settings.connectionIdleTimeoutS ?? LIMIT_DEFAULTS.connectionIdleTimeoutS}s`,
    MAX_CONNECTIONS: String(settings.maxConnections ?? LIMIT_DEFAULTS.maxConnections),
    MAX_HEAP_BYTES: String(settings.maxHeapBytes ?? LIMIT_DEFAULTS.maxHeapBytes),
    EMBEDDER_ENDPOINTS: endpointList(settings.embedderEndpoints ?? [{ host: settings.embedderHost, port: settings.embedderPort }]),
    AUTHZ_ENDPOINTS: endpointList(settings.authzEndpoints ?? [{ host: settings.authzHost, port: settings.authzPort }]),
    HCM_TRACING: hcmTracing(settings.otlpEndpoint),
    OTLP_CLUSTER: otlpCluster(settings.otlpEndpoint),
  };
  for (const placeholder of Object.keys(localReplies)) {
    // Bodies sit in single-quoted YAML scalars and Envoy format strings, where ' and % are special.
    const body = localReplyBody(placeholder);
    if (/['%]/.test(body)) throw new Error(`local reply ${placeholder} must not contain ' or %`);
    values[placeholder] = body;
  }
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`unknown placeholder {{${name}}} in the Envoy template`);
    return value;
  });
}

// A YAML flow sequence of lb_endpoints, on one line so it drops into the template's indentation.
function endpointList(endpoints: readonly Endpoint[]): string {
  if (endpoints.length === 0) throw new Error('an Envoy cluster needs at least one endpoint');
  const items = endpoints.map((e) => `{ endpoint: { address: { socket_address: { address: ${e.host}, port_value: ${e.port} } } } }`);
  return `[${items.join(', ')}]`;
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: tsx envoy/render.ts <out.yaml>');
    process.exit(2);
  }
  mkdirSync(dirname(resolve(out)), { recursive: true });
  writeFileSync(out, renderEnvoyConfig(settingsFromEnv(process.env)));
}
