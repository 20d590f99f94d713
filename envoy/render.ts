/**
 * Renders envoy/envoy.yaml.tmpl into a bootstrap file. Only ports, certificate paths, upstream
 * addresses, timeouts and the catalogue's problem bodies are substituted.
 *
 * CLI: `npx tsx envoy/render.ts <out.yaml>` (or `--caller-secret <sds-file>`: that file alone), reading GATEWAY_PORT, GATEWAY_HOST,
 * GATEWAY_HOST_V6, ENVOY_ADMIN_PORT, EMBEDDER_HOST, EMBEDDER_PORT, AUTHZ_HOST, AUTHZ_PORT,
 * TLS_CERT_FILE, TLS_KEY_FILE, AUTHZ_TIMEOUT_MS, EMBEDDER_TIMEOUT_S, RETRY_AFTER_SECONDS,
 * REQUEST_TIMEOUT_S, CONNECTION_IDLE_TIMEOUT_S, ENVOY_MAX_CONNECTIONS, ENVOY_MAX_HEAP_MB, AUTHZ_MAX_CHECKS,
 * ENVOY_PER_SOURCE_RPS, ENVOY_NEW_KEY_RPS, ENVOY_STATS_PORT (envoy/stats.ts; 0, the default, is off) and AUTHZ_CALLER_TOKEN_FILE (default .local/authz-caller-token, read when
 * it exists; its first line is written to authz-caller-token.sds.yaml next to the bootstrap, which
 * names that file and holds no secret) from the environment; EMBEDDER_ENDPOINTS / AUTHZ_ENDPOINTS (`host:port,host:port`)
 * list several replicas instead of one. An upstream given by IPv4 address is a STATIC cluster;
 * one given by a DNS name (a Kubernetes headless Service) is STRICT_DNS: every address the name
 * resolves to is its own host, with its own health checks and outlier detection, re-resolved
 * every second.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AUTHZ_CALLER_METADATA } from '../contract/headers.js';
import { REQUEST_ID_LUA_PATTERN, REQUEST_ID_MAX_LENGTH } from '../contract/request-id.js';
import { EnvReader, type Env } from '../contract/env.js';
import { settingDefault, type SettingOf } from '../contract/settings.js';
import { localReplyMappers, PER_SOURCE_REFUSED_STATUS } from './local-replies.js';
import { ADDRESSES_TRACKED, localRateLimit } from './local-ratelimit.js';
import { knownKeysFilter, NEW_KEY_RPS_DEFAULT, newKeyLimit } from './new-keys.js';
import { statsCluster, statsListener } from './stats.js';
import { hcmTracing, otlpCluster, parseOtlpEndpoint, type OtlpEndpoint } from './tracing.js';

export const templatePath = fileURLToPath(new URL('./envoy.yaml.tmpl', import.meta.url));

export interface EnvoySettings {
  readonly gatewayHost: string;
  /** Further addresses of the gateway listener (dual-stack: the IPv6 one). */
  readonly gatewayExtraHosts?: readonly string[];
  readonly gatewayPort: number;
  readonly adminPort: number;
  /** A listener serving only GET /stats/prometheus from the admin interface (envoy/stats.ts); 0 or absent: none. */
  readonly statsPort?: number;
  readonly embedderHost: string;
  readonly embedderPort: number;
  readonly authzHost: string;
  readonly authzPort: number;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  /** ext_authz's deadline; past it Envoy fails closed with 503 authorization_unavailable. */
  readonly authzTimeoutMs: number;
  /** Checks outstanding at authz at once, all replicas together; past it 503 at once (AUTHZ_DEFAULTS). */
  readonly authzMaxChecks?: number;
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
  /**
   * Requests per second one source address may send (bursts of twice that), refused with 429
   * before ext_authz; 0 or absent: no such limit. Only where Envoy sees clients' own addresses:
   * behind a load balancer that hides them, every client would share one budget.
   */
  readonly perSourceRps?: number;
  /**
   * Checks per second for keys this Envoy has not yet seen authz accept, or no key (bursts of
   * twice that), refused with 503 before ext_authz past it (envoy/new-keys.ts); 0: no such
   * budget; absent: the declared default.
   */
  readonly newKeyRps?: number;
  /** Several embedder replicas; when absent, the one at embedderHost:embedderPort. */
  readonly embedderEndpoints?: readonly Endpoint[];
  /** Several authz replicas; when absent, the one at authzHost:authzPort. */
  readonly authzEndpoints?: readonly Endpoint[];
  /**
   * The secret sent to authz with every Check (authz/src/caller.ts). Without it the rendered
   * Envoy sends none and authz refuses every Check: fail closed, every request 503.
   */
  readonly authzCallerToken?: string | undefined;
  /**
   * The file-based SDS secret that carries it (`writeCallerSecret`); the bootstrap names the file,
   * never the token. `writeEnvoyConfig` puts it next to the bootstrap by default.
   */
  readonly authzCallerSdsFile?: string | undefined;
  /** Where spans go (OTEL_EXPORTER_OTLP_ENDPOINT); no tracer when absent. */
  readonly otlpEndpoint?: OtlpEndpoint | undefined;
}

/** One upstream replica. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** How long Envoy waits for a Check, and how many it has outstanding at authz at once: the declared defaults (contract/settings.ts argues them). */
export const AUTHZ_DEFAULTS = Object.freeze({
  timeoutMs: settingDefault('AUTHZ_TIMEOUT_MS'),
  maxChecks: settingDefault('AUTHZ_MAX_CHECKS'),
});

/** Defaults of the optional limits (declared in contract/settings.ts); the README's "Security" section measures them. */
const LIMIT_DEFAULTS = Object.freeze({
  requestTimeoutS: settingDefault('REQUEST_TIMEOUT_S'),
  connectionIdleTimeoutS: settingDefault('CONNECTION_IDLE_TIMEOUT_S'),
  maxConnections: settingDefault('ENVOY_MAX_CONNECTIONS'),
  maxHeapBytes: settingDefault('ENVOY_MAX_HEAP_MB') * 1024 * 1024,
});

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
/** An upstream: an IPv4 address, or a DNS name (RFC 1123 labels). */
const UPSTREAM_HOST =
  /^(\d{1,3}(\.\d{1,3}){3}|[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)$/;
/** IPv6 literals as Envoy takes them in a socket address (no brackets, no zone). */
const IPV6 = /^[0-9a-fA-F:]*:[0-9a-fA-F:.]*$/;

/** Parses settings from an environment map, reporting every bad variable at once (contract/env.ts). */
export function settingsFromEnv(env: Env): EnvoySettings {
  const read = new EnvReader(env);
  // Each default is the variable's declared one (contract/settings.ts); these say only what a value must be.
  const port = (name: SettingOf<number>): number => read.integer(name, 0, 65535);
  const positive = (name: SettingOf<number>): number => read.integer(name, 1);
  // STATIC listeners take IP addresses, not names.
  const ip = (name: SettingOf<string>): string => read.matching(name, IPV4, 'an IPv4 address');
  const upstream = (name: SettingOf<string>): string => read.matching(name, UPSTREAM_HOST, 'an IPv4 address or a DNS name');
  const file = (name: SettingOf<string>): string => resolve(read.string(name));
  // Set but empty is meaningful here: no IPv6 listener.
  const ip6 = (name: SettingOf<string>): string[] => {
    const value = read.blankable(name);
    if (value === '') return [];
    if (!IPV6.test(value)) read.problem(name, 'be an IPv6 address or empty', value);
    return [value];
  };
  const nonNegative = (name: SettingOf<number>): number => read.integer(name, 0);
  const endpoints = (name: 'EMBEDDER_ENDPOINTS' | 'AUTHZ_ENDPOINTS'): { [key: string]: readonly Endpoint[] } => {
    const items = read.list(name);
    if (items.length === 0) return {};
    const list = items.map((item) => {
      const [host = '', portText = ''] = item.split(':');
      const port = Number(portText);
      if (!UPSTREAM_HOST.test(host) || !Number.isInteger(port) || port < 1 || port > 65535)
        read.problem(name, 'be host:port[,host:port…]', item);
      return { host, port };
    });
    return { [name === 'EMBEDDER_ENDPOINTS' ? 'embedderEndpoints' : 'authzEndpoints']: list };
  };
  return read.finish('Envoy', {
    gatewayHost: ip('GATEWAY_HOST'),
    gatewayPort: port('GATEWAY_PORT'),
    adminPort: port('ENVOY_ADMIN_PORT'),
    statsPort: port('ENVOY_STATS_PORT'),
    embedderHost: upstream('EMBEDDER_HOST'),
    embedderPort: port('EMBEDDER_PORT'),
    authzHost: upstream('AUTHZ_HOST'),
    authzPort: port('AUTHZ_PORT'),
    tlsCertFile: file('TLS_CERT_FILE'),
    tlsKeyFile: file('TLS_KEY_FILE'),
    authzTimeoutMs: positive('AUTHZ_TIMEOUT_MS'),
    authzMaxChecks: positive('AUTHZ_MAX_CHECKS'),
    embedderTimeoutS: positive('EMBEDDER_TIMEOUT_S'),
    retryAfterSeconds: positive('RETRY_AFTER_SECONDS'),
    // Dual-stack by default; an empty GATEWAY_HOST_V6 listens on IPv4 only.
    gatewayExtraHosts: ip6('GATEWAY_HOST_V6'),
    requestTimeoutS: positive('REQUEST_TIMEOUT_S'),
    connectionIdleTimeoutS: positive('CONNECTION_IDLE_TIMEOUT_S'),
    maxConnections: positive('ENVOY_MAX_CONNECTIONS'),
    maxHeapBytes: positive('ENVOY_MAX_HEAP_MB') * 1048576,
    perSourceRps: nonNegative('ENVOY_PER_SOURCE_RPS'),
    newKeyRps: nonNegative('ENVOY_NEW_KEY_RPS'),
    ...endpoints('EMBEDDER_ENDPOINTS'),
    ...endpoints('AUTHZ_ENDPOINTS'),
    otlpEndpoint: otlp(read),
    authzCallerToken: callerToken(read),
  });
}

// Envoy's OTLP cluster needs an explicit port, so it is stricter than the services' reader.
function otlp(read: EnvReader): OtlpEndpoint | undefined {
  const raw = read.optional('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (raw === undefined) return undefined;
  try {
    return parseOtlpEndpoint(raw);
  } catch {
    read.problem('OTEL_EXPORTER_OTLP_ENDPOINT', 'be http://<host>:<port> (an explicit port) for Envoy', raw);
    return undefined;
  }
}

// Named: it must exist. Not named: make up's file when there is one (a bare render for a look at
// the config works without it, and its Envoy is refused by authz). The file may hold several
// tokens during a rotation (contract/secrets.ts): Envoy sends the first, the one in use.
function callerToken(read: EnvReader): string | undefined {
  const named = read.optional('AUTHZ_CALLER_TOKEN_FILE');
  const file = resolve(read.string('AUTHZ_CALLER_TOKEN_FILE'));
  if (!existsSync(file)) {
    if (named) read.problem('AUTHZ_CALLER_TOKEN_FILE', 'name a file', named);
    return undefined;
  }
  return firstValue(readFileSync(file, 'utf8'));
}

/** The value in use of a secret file holding one value per line (contract/secrets.ts). */
export function firstValue(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line !== '') ?? ''
  );
}

/** The SDS secret's name in the bootstrap and the secret file. */
const CALLER_SECRET_NAME = 'authz-caller-token';

function checkCallerToken(token: string): void {
  // It travels as a header value: anything but printable ASCII would be refused or change meaning.
  if (!/^[\x21-\x7e]{32,}$/.test(token)) throw new Error('the authz caller token must be at least 32 printable characters without spaces');
}

/**
 * The authz cluster's upstream filters that add the caller token to every Check, from the SDS
 * file `sdsFile` (nothing without a token: authz then refuses every Check).
 */
export function callerFilters(token: string | undefined, sdsFile: string): string {
  if (token === undefined) return '';
  checkCallerToken(token);
  const injector = {
    name: 'envoy.filters.http.credential_injector',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.credential_injector.v3.CredentialInjector',
      overwrite: true,
      // Without the secret no Check leaves: fail closed.
      allow_request_without_credential: false,
      credential: {
        name: 'envoy.http.injected_credentials.generic',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.http.injected_credentials.generic.v3.Generic',
          credential: {
            name: CALLER_SECRET_NAME,
            // Watched: a file renamed into its directory (writeCallerSecret; a Kubernetes volume
            // update) is read again.
            sds_config: { path_config_source: { path: sdsFile, watched_directory: { path: dirname(sdsFile) } } },
          },
          header: AUTHZ_CALLER_METADATA,
        },
      },
    },
  };
  const codec = {
    name: 'envoy.filters.http.upstream_codec',
    typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec' },
  };
  return `http_filters: ${JSON.stringify([injector, codec])}`;
}

/** Where `writeEnvoyConfig` puts the caller token's SDS file for the bootstrap `configFile`. */
export function callerSdsFileFor(configFile: string): string {
  return resolve(dirname(configFile), `${CALLER_SECRET_NAME}.sds.yaml`);
}

/**
 * Writes the caller token's SDS file (mode 600) by a rename in its directory, so a running Envoy
 * never reads half a file and takes the new token for the next Check (step 2 of a rotation).
 */
export function writeCallerSecret(sdsFile: string, token: string): void {
  checkCallerToken(token);
  const resource = {
    resources: [
      {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
        name: CALLER_SECRET_NAME,
        generic_secret: { secret: { inline_string: token } },
      },
    ],
  };
  mkdirSync(dirname(sdsFile), { recursive: true });
  const next = `${sdsFile}.next`;
  writeFileSync(next, `${JSON.stringify(resource)}\n`, { mode: 0o600 });
  renameSync(next, sdsFile);
}

/**
 * Renders `settings` into `configFile` and, with a caller token, its SDS file next to it: the
 * bootstrap holds no secret; the SDS file (mode 600) holds the token.
 */
export function writeEnvoyConfig(configFile: string, settings: EnvoySettings): void {
  const sdsFile = settings.authzCallerSdsFile ?? callerSdsFileFor(configFile);
  mkdirSync(dirname(resolve(configFile)), { recursive: true });
  if (settings.authzCallerToken !== undefined) writeCallerSecret(sdsFile, settings.authzCallerToken);
  writeFileSync(configFile, renderEnvoyConfig({ ...settings, authzCallerSdsFile: sdsFile }), { mode: 0o600 });
}

/** The per-source local_ratelimit filter as one YAML flow item, or nothing when `rps` is 0. */
export function perSourceLimit(rps: number): string {
  if (rps === 0) return '';
  return localRateLimit({
    name: 'envoy.filters.http.local_ratelimit',
    statPrefix: 'per_source',
    refusedStatus: PER_SOURCE_REFUSED_STATUS,
    // One bucket per source address (an entry without a value), bounded.
    descriptors: [{ actions: [{ remote_address: {} }], entries: [{ key: 'remote_address' }], perSecond: rps }],
    maxDynamic: ADDRESSES_TRACKED,
  });
}

/** Fills the template; fails on any placeholder it does not know, so none can slip through. */
export function renderEnvoyConfig(settings: EnvoySettings, template = readFileSync(templatePath, 'utf8')): string {
  const embedder = settings.embedderEndpoints ?? [{ host: settings.embedderHost, port: settings.embedderPort }];
  const authz = settings.authzEndpoints ?? [{ host: settings.authzHost, port: settings.authzPort }];
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
    AUTHZ_MAX_CHECKS: String(settings.authzMaxChecks ?? AUTHZ_DEFAULTS.maxChecks),
    EMBEDDER_TIMEOUT: `${settings.embedderTimeoutS}s`,
    RETRY_AFTER_SECONDS: String(settings.retryAfterSeconds),
    GATEWAY_ADDITIONAL_ADDRESSES: JSON.stringify(
      (settings.gatewayExtraHosts ?? []).map((address) => ({
        address: { socket_address: { address, port_value: settings.gatewayPort } },
      })),
    ),
    REQUEST_TIMEOUT: `${settings.requestTimeoutS ?? LIMIT_DEFAULTS.requestTimeoutS}s`,
    CONNECTION_IDLE_TIMEOUT: `${settings.connectionIdleTimeoutS ?? LIMIT_DEFAULTS.connectionIdleTimeoutS}s`,
    MAX_CONNECTIONS: String(settings.maxConnections ?? LIMIT_DEFAULTS.maxConnections),
    MAX_HEAP_BYTES: String(settings.maxHeapBytes ?? LIMIT_DEFAULTS.maxHeapBytes),
    EMBEDDER_ENDPOINTS: endpointList(embedder),
    EMBEDDER_CLUSTER_TYPE: clusterType(embedder),
    AUTHZ_ENDPOINTS: endpointList(authz),
    AUTHZ_CLUSTER_TYPE: clusterType(authz),
    HCM_TRACING: hcmTracing(settings.otlpEndpoint),
    OTLP_CLUSTER: otlpCluster(settings.otlpEndpoint),
    STATS_LISTENER: statsListener(settings.statsPort ?? 0),
    STATS_CLUSTER: statsCluster(settings.statsPort ?? 0, settings.adminPort),
    // A bare render (a look at the config) names one in the working directory.
    AUTHZ_CALLER_FILTERS: callerFilters(settings.authzCallerToken, settings.authzCallerSdsFile ?? callerSdsFileFor('envoy.yaml')),
    PER_SOURCE_LIMIT: perSourceLimit(settings.perSourceRps ?? 0),
    KNOWN_KEYS: knownKeysFilter(settings.newKeyRps ?? NEW_KEY_RPS_DEFAULT),
    NEW_KEY_LIMIT: newKeyLimit(settings.newKeyRps ?? NEW_KEY_RPS_DEFAULT),
    // The request-id rule's one owner is contract/request-id.ts; the Lua filter gets it from there.
    REQUEST_ID_MAX_LENGTH: String(REQUEST_ID_MAX_LENGTH),
    REQUEST_ID_LUA_PATTERN,
    // JSON is YAML: the mappers drop into the template as one flow sequence.
    LOCAL_REPLY_MAPPERS: JSON.stringify(localReplyMappers('gateway', settings.retryAfterSeconds)),
  };
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`unknown placeholder {{${name}}} in the Envoy template`);
    return value;
  });
}

/** STATIC for addresses; STRICT_DNS once any endpoint is a name (each resolved address is a host). */
export function clusterType(endpoints: readonly Endpoint[]): 'STATIC' | 'STRICT_DNS' {
  return endpoints.every((e) => IPV4.test(e.host)) ? 'STATIC' : 'STRICT_DNS';
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
    console.error('usage: tsx envoy/render.ts <out.yaml> | --caller-secret <sds-file>');
    process.exit(2);
  }
  // Step 2 of a caller token rotation: only the SDS file, from AUTHZ_CALLER_TOKEN_FILE's first
  // line; the running Envoy sends it from its next Check.
  if (out === '--caller-secret') {
    const sdsFile = process.argv[3];
    const token = settingsFromEnv(process.env).authzCallerToken;
    if (!sdsFile || token === undefined) {
      console.error(
        'usage: tsx envoy/render.ts --caller-secret <sds-file> (with AUTHZ_CALLER_TOKEN_FILE, default .local/authz-caller-token)',
      );
      process.exit(2);
    }
    writeCallerSecret(resolve(sdsFile), token);
    process.exit(0);
  }
  // The caller token goes to its own SDS file next to the bootstrap (mode 600), not into it.
  writeEnvoyConfig(out, settingsFromEnv(process.env));
}
