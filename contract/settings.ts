/**
 * Every setting of the gateway, declared once: its variables with their defaults, who reads it,
 * and what it means. Readers take their defaults from here and nowhere else (contract/env.ts's
 * EnvReader looks each one up by the variable's name; `settingDefault` for the few that compute
 * with it), so changing a default is one edit here. docs/configuration.md's table is generated
 * from this list (`npx tsx scripts/docs/configuration.ts --write`), and
 * test/contract/settings.unit.test.ts fails when the page differs, when a reader reads a variable
 * declared nowhere here or one declared here is read nowhere, and when a reader falls back on a
 * default of its own. `shown` and `meaning` are Markdown, as the page shows them.
 */

/** A variable's default: what a reader takes when it is unset. null: none (unset means absent or off, or the reader computes one; `shown` says how). */
type DefaultValue = string | number | boolean | null;

interface Declaration {
  /** Each variable with its default, in the order the page names them (a few are read together). */
  readonly defaults: Readonly<Record<string, DefaultValue>>;
  /** The default as the page shows it, where the values alone do not say it all; it must name each value. */
  readonly shown?: string;
  readonly usedBy: string;
  readonly meaning: string;
}

const DECLARATIONS = [
  { defaults: { GATEWAY_HOST: '0.0.0.0' }, usedBy: 'Envoy', meaning: 'HTTPS listener address (IPv4)' },
  { defaults: { GATEWAY_HOST_V6: '::' }, usedBy: 'Envoy', meaning: "The listener's IPv6 address (dual-stack); empty listens on IPv4 only" },
  {
    defaults: { REQUEST_TIMEOUT_S: 60 },
    usedBy: 'Envoy',
    meaning: 'The whole request, body included, must arrive within this (slow uploads end with 400)',
  },
  {
    defaults: { CONNECTION_IDLE_TIMEOUT_S: 60 },
    usedBy: 'Envoy',
    meaning: 'A connection with no request in flight is closed after this (sooner under pressure)',
  },
  {
    defaults: { ENVOY_MAX_CONNECTIONS: 10_000 },
    usedBy: 'Envoy',
    meaning: 'Downstream connections at once; idle ones are shed from half of it',
  },
  {
    defaults: { ENVOY_PER_SOURCE_RPS: 0 },
    shown: '`0` (off)',
    usedBy: 'Envoy',
    meaning:
      "Requests per second one client address may send (bursts of twice that); past it 429 `rate_limit_exceeded` before authz is asked. Only where Envoy sees clients' own addresses",
  },
  // authz held to 150m of CPU decides 100-150 Checks a second (1.0-1.5 ms of CPU each); 25 a
  // second of keys it has not accepted (a flood of junk keys, all new) leave most of that to the
  // keys in use. A new key's first burst of more than 50 at once sees some 503s with retry-after.
  {
    defaults: { ENVOY_NEW_KEY_RPS: 25 },
    shown: '`25` (`0`: off)',
    usedBy: 'Envoy',
    meaning:
      'Checks per second one Envoy sends authz for keys it has not yet seen authz accept, or no key (bursts of twice that), 2/5 of it at most from one client address; past it 503 `authorization_unavailable` with retry-after, before authz is asked. Keys in use are never held back by it',
  },
  {
    defaults: { ENVOY_MAX_HEAP_MB: 512 },
    usedBy: 'Envoy',
    meaning: 'Heap for the overload actions (timers shrink from 70%, big streams reset from 85%, requests refused at 95%)',
  },
  // Envoy is about a quarter of the path's CPU (BENCHMARKS.md), so on one machine shared with
  // authz, the embedder and Redis it needs a quarter of the cores; each further worker splits the
  // same traffic into more connections and wake-ups (on 2 shared cores, 2 workers cost 1-24 %
  // more of Envoy's CPU per request than 1 in each of 17 alternated rounds: bench/envoy-ab.ts).
  {
    defaults: { ENVOY_CONCURRENCY: null },
    shown: 'one per 4 usable cores, at least 1',
    usedBy: 'stack',
    meaning:
      "Envoy's worker threads in `make up`'s stack, which shares the machine with authz, the embedder and Redis. The Kubernetes gateway pod, which runs Envoy alone, sets one per CPU of its limit",
  },
  { defaults: { GATEWAY_PORT: 8443 }, usedBy: 'Envoy', meaning: 'HTTPS port' },
  { defaults: { ENVOY_ADMIN_PORT: 9901 }, usedBy: 'Envoy', meaning: 'Admin interface (always 127.0.0.1)' },
  {
    defaults: { ENVOY_STATS_PORT: 0 },
    shown: '`0` (off)',
    usedBy: 'Envoy',
    meaning:
      'A listener serving only `GET /stats/prometheus` from the admin interface, for a Prometheus outside the pod (9902 in the Kubernetes manifests); everything else on it is 404',
  },
  {
    defaults: { ENVOY_BIN: 'envoy' },
    shown: '`envoy` on PATH if 1.40.x, else `.venv/bin/envoy`',
    usedBy: 'stack',
    meaning: 'Envoy binary',
  },
  {
    defaults: { TLS_CERT_FILE: '.local/tls/server.pem', TLS_KEY_FILE: '.local/tls/server-key.pem' },
    usedBy: 'Envoy',
    meaning: 'Server certificate (`make certs` makes a local CA and one for localhost, 127.0.0.1)',
  },
  // Well past authz's own Redis timeout (REDIS_TIMEOUT_MS, 500 ms): equal, a burst that a
  // CPU-limited authz decides in 600 ms failed whole, though a dead Redis is still answered at 500 ms.
  {
    defaults: { AUTHZ_TIMEOUT_MS: 2000 },
    usedBy: 'Envoy',
    meaning:
      "ext_authz deadline; past it 503 `authorization_unavailable`. Longer than authz's own Redis timeout (`REDIS_TIMEOUT_MS`), so a Check slowed by a starved CPU is still answered ([docs/cpu-limits.md](cpu-limits.md))",
  },
  // Keeps what authz is asked within what it can decide by AUTHZ_TIMEOUT_MS: at 150m of CPU authz
  // decides about 1 Check per 7 ms of wall time, so 128 take about 0.9 s; 512 because a keyless Check
  // costs authz well under a millisecond and a flood of them must not take every slot from legitimate
  // requests (test/e2e/floods.test.ts: 300 at once; docs/cpu-limits.md). The excess costs authz nothing.
  {
    defaults: { AUTHZ_MAX_CHECKS: 512 },
    usedBy: 'Envoy',
    meaning:
      'Checks outstanding at authz at once, all replicas together (a circuit breaker); past it 503 `authorization_unavailable` at once. Raise it with the replicas',
  },
  // Above Envoy's own bound (AUTHZ_MAX_CHECKS), so with one gateway Envoy refuses first and authz
  // spends nothing on the excess; this one holds when several callers share authz.
  {
    defaults: { AUTHZ_MAX_CHECKS_IN_FLIGHT: 1024 },
    usedBy: 'authz',
    meaning:
      'Checks one authz holds at once (16 decided at a time, oldest first); past it, and for a Check whose deadline passed while it waited, a fast 503 `authorization_unavailable` with no work done',
  },
  // The largest valid request (1,000 inputs x 512 tokens) took minutes on 2 shared cores with the
  // default model; the OpenAI SDKs' own default timeout is 10 minutes.
  {
    defaults: { EMBEDDER_TIMEOUT_S: 600 },
    usedBy: 'Envoy',
    meaning:
      'Route and idle timeout towards the embedder (the largest request takes minutes on 2 cores); past it 503 `upstream_unavailable`',
  },
  { defaults: { RETRY_AFTER_SECONDS: 1 }, usedBy: 'Envoy, embedder', meaning: '`retry-after` on 503s' },
  {
    defaults: { EMBEDDER_HOST: '127.0.0.1', EMBEDDER_PORT: 8081 },
    usedBy: 'embedder, Envoy',
    meaning: 'Embedder address (for Envoy also a DNS name: every address it resolves to is a replica)',
  },
  {
    defaults: { AUTHZ_HOST: '127.0.0.1', AUTHZ_PORT: 9191 },
    usedBy: 'authz, Envoy',
    meaning: 'authz gRPC address (for Envoy also a DNS name, as above)',
  },
  {
    defaults: { GRANT_SECRET: null, GRANT_SECRET_FILE: '.local/grant-secret' },
    usedBy: 'authz, embedder',
    meaning:
      "The secret authz signs each request's grant with and the embedder verifies it with (≥ 32 characters; `make up` creates the file, mode 600); admin needs none. The file may hold up to 4 values, one per line, during a rotation: the first signs, every one is accepted (re-read every 2 s). It, the caller token and the metrics token rotate without a failed request: [deploy/README.md](../deploy/README.md#rotating-the-internal-secrets)",
  },
  // Envoy's REQUEST_TIMEOUT_S (60 s) for the body, plus a margin.
  {
    defaults: { GRANT_TTL_MS: 90_000 },
    usedBy: 'authz',
    meaning: 'How long a grant is valid: the whole request, body included, must reach the embedder within it',
  },
  {
    defaults: { SETTLEMENT_TIMEOUT_MS: 1000 },
    usedBy: 'embedder',
    meaning:
      'How long the embedder waits for one admission, and for a usage record with its retries; past it the request fails closed (503) and the record can no longer be written',
  },
  {
    defaults: { REDIS_URL: 'redis://127.0.0.1:6379' },
    shown: "`make up`'s own (written to `.local/redis-url`, read by authz and the CLI), else `redis://127.0.0.1:6379`",
    usedBy: 'authz, embedder, admin, stack',
    meaning: 'Redis (`redis://[user]:password@host:port` or `rediss://` for TLS)',
  },
  {
    defaults: { REDIS_URL_FILE: '.local/redis-url' },
    usedBy: 'authz, embedder, admin',
    meaning: 'File holding `REDIS_URL` (how Kubernetes hands it over, from a Secret)',
  },
  {
    defaults: { REDIS_USERNAME: null, REDIS_PASSWORD: null, REDIS_PASSWORD_FILE: null },
    usedBy: 'embedder (and authz)',
    meaning:
      'An ACL user apart from the URL; `make up` runs the embedder as `ctg-embedder`, allowed only the settlement functions (`EMBEDDER_REDIS_USER` renames it)',
  },
  { defaults: { STACK_REDIS_PORT: 6390 }, usedBy: 'stack', meaning: "Port of `make up`'s own Redis" },
  {
    defaults: { SETTLEMENT_MIN_REPLICAS: 0 },
    usedBy: 'embedder',
    meaning:
      'Redis replicas that must hold a usage record (Redis `WAIT`) before its 200; fewer within `SETTLEMENT_WAIT_MS`, the record is voided, the tokens refunded and the request answered 503 `authorization_unavailable`. 0 for a standalone Redis; the deploy overlays with replicas set 1, so a failover loses no answered request',
  },
  { defaults: { SETTLEMENT_WAIT_MS: 500 }, usedBy: 'embedder', meaning: 'How long the embedder waits for those replicas (10 to 2000)' },
  {
    defaults: { EMBEDDER_REDIS_USERNAME: null, EMBEDDER_REDIS_PASSWORD: null, EMBEDDER_REDIS_PASSWORD_FILE: null },
    usedBy: 'authz',
    meaning:
      "The embedder's Redis user, which authz creates and keeps (re-created on every connection and every 30 s, so it survives a Redis restart): FCALL of the settlement functions only, on keys under a namespace the embedder never learns ([docs/settlement.md](settlement.md)). Unset: nobody creates it (development, where the embedder uses a full user)",
  },
  {
    defaults: { EMBEDDER_REDIS_USER: 'ctg-embedder' },
    usedBy: 'stack',
    meaning: 'The Redis ACL user `make up` runs the embedder as (allowed only the settlement functions)',
  },
  {
    defaults: { STACK_DIR: '.local' },
    usedBy: 'stack',
    meaning: "Where `make up` keeps its state: logs, secrets, certificates, its Redis's data",
  },
  {
    defaults: { REDIS_SENTINELS: null, REDIS_SENTINEL_NAME: 'ctg' },
    usedBy: 'authz, embedder, admin',
    meaning: "Reach the primary through Sentinel (`host:port,…`); the URL's password and `rediss://` still apply to it",
  },
  {
    defaults: { REDIS_CLUSTER_NODES: null },
    usedBy: 'authz, embedder, admin',
    meaning:
      'Use a Redis Cluster through these seed nodes (`host:port,…`; not with Sentinel); the URL\'s user, password and `rediss://` apply to every node (docs/settlement.md, "Redis Cluster")',
  },
  {
    defaults: { REDIS_SENTINEL_PASSWORD_FILE: null },
    usedBy: 'authz, embedder, admin',
    meaning: "File holding the Sentinels' own password (their `requirepass`)",
  },
  {
    defaults: { REDIS_TLS_CA_FILE: null },
    shown: '— (system CAs)',
    usedBy: 'authz, embedder, admin',
    meaning: 'PEM CA to verify a `rediss://` Redis (and its Sentinels) with',
  },
  {
    defaults: { EMBEDDER_ENDPOINTS: null, AUTHZ_ENDPOINTS: null },
    usedBy: 'Envoy',
    meaning:
      'Several replicas (`host:port,…`) instead of one host and port; an IPv4 address is one host, a DNS name every address it resolves to (re-resolved each second)',
  },
  // A few of Envoy's 0.5 s health-check intervals (envoy/envoy.yaml.tmpl).
  {
    defaults: { AUTHZ_DRAIN_MS: 1500 },
    usedBy: 'authz',
    meaning: 'On SIGTERM, how long it keeps answering (NOT_SERVING) before it stops listening; with one replica, the longest request',
  },
  // The longest request (1,000 × 512 tokens) takes minutes on 2 cores; Envoy's route allows 600 s.
  { defaults: { EMBEDDER_DRAIN_S: 600 }, usedBy: 'embedder', meaning: 'On SIGTERM, how long requests in flight may take to finish' },
  // Off by default: Kubernetes takes a pod out of rotation itself (preStop sleep, new pod IP).
  {
    defaults: { EMBEDDER_DRAIN_NOTICE_MS: 0 },
    usedBy: 'embedder',
    meaning:
      "On SIGTERM, how long `/ready` answers 503 while requests are still served, before the listener closes: set it to at least the load balancer's health-check interval when a replica is restarted at the same address (`make fleet` uses 2000); Kubernetes needs none (the preStop sleep does it)",
  },
  { defaults: { AUTHZ_METRICS_HOST: '127.0.0.1', AUTHZ_METRICS_PORT: 9192 }, usedBy: 'authz', meaning: 'Its Prometheus `/metrics`' },
  {
    defaults: { OTEL_EXPORTER_OTLP_ENDPOINT: null },
    shown: '— (tracing off)',
    usedBy: 'Envoy, authz, embedder',
    meaning: 'OTLP/HTTP collector; one setting turns traces on in all three',
  },
  { defaults: { REDIS_KEY_PREFIX: 'ctg:' }, usedBy: 'authz, embedder, admin', meaning: 'Prefix of every Redis key' },
  {
    defaults: { REDIS_TIMEOUT_MS: 500 },
    usedBy: 'authz, admin (at least 2 s)',
    meaning: 'Bound on each Redis command; past it UNAVAILABLE',
  },
  { defaults: { KEY_PREFIX: 'CTG' }, usedBy: 'authz, admin', meaning: 'API key prefix' },
  {
    defaults: { KEY_HASH_SECRET: null },
    usedBy: 'authz, admin',
    meaning: 'HMAC secret for key hashes (≥ 32 characters); wins over the file',
  },
  {
    defaults: { KEY_HASH_SECRET_FILE: '.local/key-hash-secret' },
    usedBy: 'authz, admin',
    meaning: 'File holding the secret (`make up` creates it, mode 600)',
  },
  {
    defaults: { AUDIT_SECRET: null, AUDIT_SECRET_FILE: '.local/audit-secret' },
    usedBy: 'admin server, CLI',
    meaning:
      "Seed of the audit trail's Ed25519 signing key, never stored in Redis (created locally on first use); its public key is published (`audit public-key`)",
  },
  {
    defaults: { ADMIN_HOST: '127.0.0.1', ADMIN_PORT: 9443 },
    usedBy: 'admin server',
    meaning:
      "The admin server's listener (plain HTTP; keep it on loopback or an internal network and put TLS in front); it also serves `GET /metrics`",
  },
  {
    defaults: { ADMIN_BOOTSTRAP_NAME: 'local-owner' },
    usedBy: 'admin server',
    meaning: 'The owner the `ADMIN_TOKEN_FILE` token is registered for at start (created if missing)',
  },
  {
    defaults: { ADMIN_SESSION_TTL_S: 28_800, ADMIN_SESSION_MAX_S: 43_200 },
    usedBy: 'admin server',
    meaning: 'A console session ends after this long unused / this long after sign-in, however much it is used',
  },
  {
    defaults: { ADMIN_TRUSTED_PROXIES: null },
    usedBy: 'admin server',
    meaning:
      "Comma-separated addresses or CIDR ranges of proxies whose `X-Forwarded-For` gives the client's address; unset, the peer's address counts",
  },
  {
    defaults: { ADMIN_PUBLIC_URL: null },
    usedBy: 'admin server',
    meaning:
      "The console's origin as browsers reach it; with `https:` its cookies are `Secure`; required with single sign-on (the redirect URI is `<ADMIN_PUBLIC_URL>/api/oidc/callback`)",
  },
  {
    defaults: { OIDC_ISSUER: null },
    usedBy: 'admin server',
    meaning: 'An OpenID Connect provider\'s issuer URL: enables "Sign in with single sign-on" ([console.md](console.md))',
  },
  {
    defaults: { OIDC_CLIENT_ID: null, OIDC_CLIENT_SECRET: null, OIDC_CLIENT_SECRET_FILE: null },
    usedBy: 'admin server',
    meaning: "The console's client at that provider (confidential, code flow); the secret as a value or a file",
  },
  {
    defaults: { AUDIT_ANCHOR_FILE: '.local/audit-anchor.jsonl' },
    usedBy: 'admin server, CLI',
    meaning: 'Signed checkpoints of the audit chain, outside Redis; `audit verify` checks them',
  },
  {
    defaults: { ADMIN_TOKEN: null, ADMIN_TOKEN_FILE: '.local/admin-token' },
    shown: '`.local/admin-token` when it exists',
    usedBy: "CLI (the server: the bootstrap owner's token)",
    meaning: 'The administrator token the CLI acts with; required once an administrator exists',
  },
  {
    defaults: { KEY_CACHE_TTL_MS: 1000 },
    usedBy: 'authz',
    meaning:
      'How long a key and its organization are cached in-process (0 = off); revocations and organization changes take effect within it',
  },
  // Unknown ids: about 4 MB at most; random ids never repeat, so a larger map would only hold more garbage.
  {
    defaults: { KEY_CACHE_MAX_KEYS: 10_000, KEY_CACHE_MAX_UNKNOWN: 50_000 },
    usedBy: 'authz',
    meaning: 'Keys that exist, and "not found" answers, held in the key cache (apart: unknown ids never evict a key)',
  },
  // A lookup takes well under a millisecond when Redis and authz keep up; 32 in flight covers a
  // burst of new legitimate keys while bounding what a flood can queue.
  {
    defaults: { KEY_LOOKUPS_MAX_IN_FLIGHT: 32 },
    usedBy: 'authz',
    meaning: 'Redis lookups of unknown key ids at once; past it such a request gets a fast 503 `authorization_unavailable`',
  },
  {
    defaults: { AUTHZ_CALLER_TOKEN: null, AUTHZ_CALLER_TOKEN_FILE: '.local/authz-caller-token' },
    usedBy: 'authz, Envoy, stack',
    meaning: 'The secret Envoy sends with every Check; authz answers nobody else (`make up` creates it, mode 600)',
  },
  {
    defaults: { AUTHZ_CALLER_AUTH: 'token' },
    usedBy: 'authz',
    meaning:
      "How Check's callers prove they are the gateway: `token` (the caller token above), or `mesh` in Istio mode, where the mesh's ingress gateway cannot send it and the mesh's mutual TLS with an AuthorizationPolicy on authz's port must admit only that gateway",
  },
  {
    defaults: { METRICS_TOKEN: null, METRICS_TOKEN_FILE: '.local/metrics-token' },
    usedBy: 'authz, admin server, Prometheus, stack',
    meaning: "Bearer token authz's and the admin server's `/metrics` require (`make up` creates it, mode 600)",
  },
  { defaults: { MODEL_DIR: '.local/models/default' }, usedBy: 'embedder, authz, admin, stack', meaning: 'Model directory' },
  { defaults: { MODEL_ID: null }, shown: "the manifest's `id`", usedBy: 'embedder, authz, admin', meaning: 'Public model id' },
  { defaults: { DEFAULT_RPM: 600, DEFAULT_TPM: 1_000_000 }, usedBy: 'authz, admin', meaning: 'Limits for organizations without their own' },
  {
    defaults: { MODEL_SESSIONS: null },
    shown: 'usable cores ÷ `ORT_INTRA_OP_THREADS`',
    usedBy: 'embedder',
    meaning:
      "Online model sessions, each running its own model calls beside the others (each a copy of the model in memory). Usable cores are the CPUs the process may run on, capped by a container's or pod's CPU limit (its cgroup quota, rounded down, at least 1)",
  },
  {
    defaults: { ORT_INTRA_OP_THREADS: null },
    shown: '1 (usable cores ÷ `MODEL_SESSIONS` where that is set)',
    usedBy: 'embedder',
    meaning: 'ONNX Runtime threads of each session (one call split across them)',
  },
  {
    defaults: { BATCH_MAX_TOKENS: null },
    shown:
      "the model's `maxTokens` × 2 rows per ONNX Runtime thread of a session (2 to 16 rows; 1024 for a 512-token model at 1 thread, 2048 at 2, 4096 at 4)",
    usedBy: 'embedder',
    meaning: 'Padded tokens per model call (the deploy env keeps 2048, the figure its memory limits were measured at)',
  },
  // One more copy of the model in memory buys online latency while a batch runs (BENCHMARKS.md round 4).
  {
    defaults: { BATCH_SESSION: 'background' },
    usedBy: 'embedder',
    meaning:
      "`background`: the Batch API's lines run on a model session of their own whose threads run at nice 19, so online work always runs first; `shared`: on the online sessions between online calls (no copy of the model of its own)",
  },
  { defaults: { BATCH_MAX_SIZE: 32 }, usedBy: 'embedder', meaning: 'Inputs per model call' },
  // A tenant's share holds one request of 1,000 inputs × 512 tokens; the whole queue holds four such
  // shares, so one tenant at its share leaves room for the others (about 16 MB of token ids).
  {
    defaults: { QUEUE_MAX_INPUTS: 4000, QUEUE_MAX_TOKENS: 2_097_152 },
    usedBy: 'embedder',
    meaning: 'Queue bounds, all organizations; beyond → 503 `overloaded`',
  },
  {
    defaults: { QUEUE_TENANT_MAX_INPUTS: 1000, QUEUE_TENANT_MAX_TOKENS: 524_288 },
    usedBy: 'embedder',
    meaning: "One organization's share of the queue; beyond → 503 `overloaded` for that organization only",
  },
  {
    defaults: { BATCH_KEK: null, BATCH_KEK_FILE: '.local/batch-kek' },
    usedBy: 'embedder, stack',
    meaning:
      "The Batch API's key-encryption keys (the first line seals, both open while rotating), or the file holding them (`make up` creates it, mode 600); without them the Batch API is off (404) and nothing is stored",
  },
  {
    defaults: { BATCH_STORE: 'dir:.local/batch', BATCH_STORE_FILE: null },
    usedBy: 'embedder, stack',
    meaning:
      'Where batch files live, sealed: `dir:<path>` or a `postgres://` URL; the file form for a URL that holds a password (a Secret)',
  },
  // A week: long enough to collect results after a long weekend, short enough that copies of
  // clinical text do not linger (docs/batch.md argues it).
  {
    defaults: { BATCH_RETENTION_DAYS: 7 },
    usedBy: 'embedder',
    meaning: 'Days a batch file is kept after its upload, or after the batch that used or made it ends',
  },
  {
    defaults: { BATCH_FILE_MAX_BYTES: 209_715_200, BATCH_FILE_MAX_LINES: 50_000 },
    usedBy: 'embedder',
    meaning: "The largest batch input file (OpenAI's limits)",
  },
  { defaults: { BATCH_WORKERS: 4 }, usedBy: 'embedder', meaning: 'Workers per replica running batch lines on the spare capacity' },
  // Online p99 during a batch against the batch's pace while online requests are about (BENCHMARKS.md, issue 27).
  {
    defaults: { BATCH_LANE_REST: 2 },
    usedBy: 'embedder',
    meaning:
      "While online requests were seen in the last 2 s, the Batch API's lane rests this many times each model call's duration after it (0 to 10; 0: no rest, the lane's full pace beside online traffic, online p99 about 1.4× during a batch instead of 1.1×)",
  },
  {
    defaults: { BATCH_LEASE_MS: 60_000 },
    usedBy: 'embedder',
    meaning:
      "How long a worker's claim on a segment of lines lasts before another replica may take it over (a crashed replica's work resumes after it)",
  },
  { defaults: { BATCH_POLL_MS: 1000 }, usedBy: 'embedder', meaning: 'How often an idle batch worker looks for work' },
  { defaults: { BATCH_SWEEP_MS: 60_000 }, usedBy: 'embedder', meaning: 'How often expired batch files and batches are removed' },
  { defaults: { LOG_LEVEL: 'info' }, usedBy: 'embedder, authz, admin server', meaning: 'pino level' },
] as const satisfies readonly Declaration[];

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
type Declared = UnionToIntersection<(typeof DECLARATIONS)[number]['defaults']>;
type Widened<T> = T extends number ? number : T extends string ? string : T extends boolean ? boolean : null;

/** The name of a declared variable. */
export type SettingName = keyof Declared & string;
/** The declared variables whose default is a `T` (a number, a string; null: those without one). */
export type SettingOf<T> = { [N in SettingName]: Declared[N] extends T ? N : never }[SettingName];

/** One setting as docs/configuration.md shows it: a variable, or a few read together (`A` / `B`, their defaults in the same order). */
export interface Setting {
  readonly names: readonly string[];
  /** The declared defaults, one per name (null: none). */
  readonly values: readonly DefaultValue[];
  /** Markdown: `shown`, else the values in backquotes (— for none), joined by ` / `. */
  readonly default: string;
  readonly usedBy: string;
  readonly meaning: string;
}

function shownDefault(values: readonly DefaultValue[]): string {
  return values.every((v) => v === null) ? '—' : values.map((v) => (v === null ? '—' : `\`${v}\``)).join(' / ');
}

export const SETTINGS: readonly Setting[] = Object.freeze(
  DECLARATIONS.map((d: Declaration): Setting => {
    const values = Object.values(d.defaults);
    return Object.freeze({
      names: Object.keys(d.defaults),
      values,
      default: d.shown ?? shownDefault(values),
      usedBy: d.usedBy,
      meaning: d.meaning,
    });
  }),
);

const DEFAULTS: ReadonlyMap<string, DefaultValue> = new Map(DECLARATIONS.flatMap((d: Declaration) => Object.entries(d.defaults)));

/** The declared default of `name`, typed as declared (a number, a string; null when there is none). */
export function settingDefault<N extends SettingName>(name: N): Widened<Declared[N]> {
  if (!DEFAULTS.has(name)) throw new Error(`${name} is declared nowhere (contract/settings.ts)`);
  return DEFAULTS.get(name) as Widened<Declared[N]>;
}
