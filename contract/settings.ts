/**
 * Every setting of the gateway, declared once: its variable names, its default and who reads it,
 * and what it means. docs/configuration.md's table is generated from this list
 * (`npx tsx scripts/docs/configuration.ts --write`), and test/contract/settings.unit.test.ts
 * fails when the page differs, when a reader (a config module, contract/*, envoy/render.ts,
 * scripts/stack/settings.ts) reads a variable declared nowhere here or one declared here is read
 * nowhere, and when a reader's literal default differs from the one declared. `default` and
 * `meaning` are Markdown, as the page shows them.
 */

/** One setting: a variable, or a few read together (`A` / `B`, their defaults in the same order). */
export interface Setting {
  readonly names: readonly string[];
  readonly default: string;
  readonly usedBy: string;
  readonly meaning: string;
}

export const SETTINGS: readonly Setting[] = Object.freeze([
  { names: ['GATEWAY_HOST'], default: '`0.0.0.0`', usedBy: 'Envoy', meaning: 'HTTPS listener address (IPv4)' },
  {
    names: ['GATEWAY_HOST_V6'],
    default: '`::`',
    usedBy: 'Envoy',
    meaning: "The listener's IPv6 address (dual-stack); empty listens on IPv4 only",
  },
  {
    names: ['REQUEST_TIMEOUT_S'],
    default: '`60`',
    usedBy: 'Envoy',
    meaning: 'The whole request, body included, must arrive within this (slow uploads end with 400)',
  },
  {
    names: ['CONNECTION_IDLE_TIMEOUT_S'],
    default: '`60`',
    usedBy: 'Envoy',
    meaning: 'A connection with no request in flight is closed after this (sooner under pressure)',
  },
  {
    names: ['ENVOY_MAX_CONNECTIONS'],
    default: '`10000`',
    usedBy: 'Envoy',
    meaning: 'Downstream connections at once; idle ones are shed from half of it',
  },
  {
    names: ['ENVOY_PER_SOURCE_RPS'],
    default: '`0` (off)',
    usedBy: 'Envoy',
    meaning:
      "Requests per second one client address may send (bursts of twice that); past it 429 `rate_limit_exceeded` before authz is asked. Only where Envoy sees clients' own addresses",
  },
  {
    names: ['ENVOY_MAX_HEAP_MB'],
    default: '`512`',
    usedBy: 'Envoy',
    meaning: 'Heap for the overload actions (timers shrink from 70%, big streams reset from 85%, requests refused at 95%)',
  },
  { names: ['GATEWAY_PORT'], default: '`8443`', usedBy: 'Envoy', meaning: 'HTTPS port' },
  { names: ['ENVOY_ADMIN_PORT'], default: '`9901`', usedBy: 'Envoy', meaning: 'Admin interface (always 127.0.0.1)' },
  {
    names: ['ENVOY_STATS_PORT'],
    default: '`0` (off)',
    usedBy: 'Envoy',
    meaning:
      'A listener serving only `GET /stats/prometheus` from the admin interface, for a Prometheus outside the pod (9902 in the Kubernetes manifests); everything else on it is 404',
  },
  { names: ['ENVOY_BIN'], default: '`envoy` on PATH if 1.40.x, else `.venv/bin/envoy`', usedBy: 'stack', meaning: 'Envoy binary' },
  {
    names: ['TLS_CERT_FILE', 'TLS_KEY_FILE'],
    default: '`.local/tls/server.pem` / `server-key.pem`',
    usedBy: 'Envoy',
    meaning: 'Server certificate (`make certs` makes a local CA and one for localhost, 127.0.0.1)',
  },
  {
    names: ['AUTHZ_TIMEOUT_MS'],
    default: '`2000`',
    usedBy: 'Envoy',
    meaning:
      "ext_authz deadline; past it 503 `authorization_unavailable`. Longer than authz's own Redis timeout (`REDIS_TIMEOUT_MS`), so a Check slowed by a starved CPU is still answered ([docs/cpu-limits.md](cpu-limits.md))",
  },
  {
    names: ['AUTHZ_MAX_CHECKS'],
    default: '`512`',
    usedBy: 'Envoy',
    meaning:
      'Checks outstanding at authz at once, all replicas together (a circuit breaker); past it 503 `authorization_unavailable` at once. Raise it with the replicas',
  },
  {
    names: ['AUTHZ_MAX_CHECKS_IN_FLIGHT'],
    default: '`1024`',
    usedBy: 'authz',
    meaning:
      'Checks one authz holds at once (16 decided at a time, oldest first); past it, and for a Check whose deadline passed while it waited, a fast 503 `authorization_unavailable` with no work done',
  },
  {
    names: ['EMBEDDER_TIMEOUT_S'],
    default: '`600`',
    usedBy: 'Envoy',
    meaning:
      'Route and idle timeout towards the embedder (the largest request takes minutes on 2 cores); past it 503 `upstream_unavailable`',
  },
  { names: ['RETRY_AFTER_SECONDS'], default: '`1`', usedBy: 'Envoy, embedder', meaning: '`retry-after` on 503s' },
  {
    names: ['EMBEDDER_HOST', 'EMBEDDER_PORT'],
    default: '`127.0.0.1` / `8081`',
    usedBy: 'embedder, Envoy',
    meaning: 'Embedder address (for Envoy also a DNS name: every address it resolves to is a replica)',
  },
  {
    names: ['AUTHZ_HOST', 'AUTHZ_PORT'],
    default: '`127.0.0.1` / `9191`',
    usedBy: 'authz, Envoy',
    meaning: 'authz gRPC address (for Envoy also a DNS name, as above)',
  },
  {
    names: ['GRANT_SECRET', 'GRANT_SECRET_FILE'],
    default: '— / `.local/grant-secret`',
    usedBy: 'authz, embedder',
    meaning:
      "The secret authz signs each request's grant with and the embedder verifies it with (≥ 32 characters; `make up` creates the file, mode 600); admin needs none. The file may hold up to 4 values, one per line, during a rotation: the first signs, every one is accepted (re-read every 2 s). It, the caller token and the metrics token rotate without a failed request: [deploy/README.md](../deploy/README.md#rotating-the-internal-secrets)",
  },
  {
    names: ['GRANT_TTL_MS'],
    default: '`90000`',
    usedBy: 'authz',
    meaning: 'How long a grant is valid: the whole request, body included, must reach the embedder within it',
  },
  {
    names: ['SETTLEMENT_TIMEOUT_MS'],
    default: '`1000`',
    usedBy: 'embedder',
    meaning:
      'How long the embedder waits for one admission, and for a usage record with its retries; past it the request fails closed (503) and the record can no longer be written',
  },
  {
    names: ['REDIS_URL'],
    default: "`make up`'s own (written to `.local/redis-url`, read by authz and the CLI), else `redis://127.0.0.1:6379`",
    usedBy: 'authz, embedder, admin, stack',
    meaning: 'Redis (`redis://[user]:password@host:port` or `rediss://` for TLS)',
  },
  {
    names: ['REDIS_URL_FILE'],
    default: '`.local/redis-url`',
    usedBy: 'authz, embedder, admin',
    meaning: 'File holding `REDIS_URL` (how Kubernetes hands it over, from a Secret)',
  },
  {
    names: ['REDIS_USERNAME', 'REDIS_PASSWORD', 'REDIS_PASSWORD_FILE'],
    default: '—',
    usedBy: 'embedder (and authz)',
    meaning:
      'An ACL user apart from the URL; `make up` runs the embedder as `ctg-embedder`, allowed only the settlement functions (`EMBEDDER_REDIS_USER` renames it)',
  },
  { names: ['STACK_REDIS_PORT'], default: '`6390`', usedBy: 'stack', meaning: "Port of `make up`'s own Redis" },
  {
    names: ['SETTLEMENT_MIN_REPLICAS'],
    default: '`0`',
    usedBy: 'embedder',
    meaning:
      'Redis replicas that must hold a usage record (Redis `WAIT`) before its 200; fewer within `SETTLEMENT_WAIT_MS`, the record is voided, the tokens refunded and the request answered 503 `authorization_unavailable`. 0 for a standalone Redis; the deploy overlays with replicas set 1, so a failover loses no answered request',
  },
  {
    names: ['SETTLEMENT_WAIT_MS'],
    default: '`500`',
    usedBy: 'embedder',
    meaning: 'How long the embedder waits for those replicas (10 to 2000)',
  },
  {
    names: ['EMBEDDER_REDIS_USERNAME', 'EMBEDDER_REDIS_PASSWORD', 'EMBEDDER_REDIS_PASSWORD_FILE'],
    default: '— / — / —',
    usedBy: 'authz',
    meaning:
      "The embedder's Redis user, which authz creates and keeps (re-created on every connection and every 30 s, so it survives a Redis restart): FCALL of the settlement functions only, on keys under a namespace the embedder never learns ([docs/settlement.md](settlement.md)). Unset: nobody creates it (development, where the embedder uses a full user)",
  },
  {
    names: ['EMBEDDER_REDIS_USER'],
    default: '`ctg-embedder`',
    usedBy: 'stack',
    meaning: 'The Redis ACL user `make up` runs the embedder as (allowed only the settlement functions)',
  },
  {
    names: ['STACK_DIR'],
    default: '`.local`',
    usedBy: 'stack',
    meaning: "Where `make up` keeps its state: logs, secrets, certificates, its Redis's data",
  },
  {
    names: ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME'],
    default: '— / `ctg`',
    usedBy: 'authz, embedder, admin',
    meaning: "Reach the primary through Sentinel (`host:port,…`); the URL's password and `rediss://` still apply to it",
  },
  {
    names: ['REDIS_CLUSTER_NODES'],
    default: '—',
    usedBy: 'authz, embedder, admin',
    meaning:
      'Use a Redis Cluster through these seed nodes (`host:port,…`; not with Sentinel); the URL\'s user, password and `rediss://` apply to every node (docs/settlement.md, "Redis Cluster")',
  },
  {
    names: ['REDIS_SENTINEL_PASSWORD_FILE'],
    default: '—',
    usedBy: 'authz, embedder, admin',
    meaning: "File holding the Sentinels' own password (their `requirepass`)",
  },
  {
    names: ['REDIS_TLS_CA_FILE'],
    default: '— (system CAs)',
    usedBy: 'authz, embedder, admin',
    meaning: 'PEM CA to verify a `rediss://` Redis (and its Sentinels) with',
  },
  {
    names: ['EMBEDDER_ENDPOINTS', 'AUTHZ_ENDPOINTS'],
    default: '—',
    usedBy: 'Envoy',
    meaning:
      'Several replicas (`host:port,…`) instead of one host and port; an IPv4 address is one host, a DNS name every address it resolves to (re-resolved each second)',
  },
  {
    names: ['AUTHZ_DRAIN_MS'],
    default: '`1500`',
    usedBy: 'authz',
    meaning: 'On SIGTERM, how long it keeps answering (NOT_SERVING) before it stops listening; with one replica, the longest request',
  },
  {
    names: ['EMBEDDER_DRAIN_S'],
    default: '`600`',
    usedBy: 'embedder',
    meaning: 'On SIGTERM, how long requests in flight may take to finish',
  },
  {
    names: ['EMBEDDER_DRAIN_NOTICE_MS'],
    default: '`0`',
    usedBy: 'embedder',
    meaning:
      "On SIGTERM, how long `/ready` answers 503 while requests are still served, before the listener closes: set it to at least the load balancer's health-check interval when a replica is restarted at the same address (`make fleet` uses 2000); Kubernetes needs none (the preStop sleep does it)",
  },
  {
    names: ['AUTHZ_METRICS_HOST', 'AUTHZ_METRICS_PORT'],
    default: '`127.0.0.1` / `9192`',
    usedBy: 'authz',
    meaning: 'Its Prometheus `/metrics`',
  },
  {
    names: ['OTEL_EXPORTER_OTLP_ENDPOINT'],
    default: '— (tracing off)',
    usedBy: 'Envoy, authz, embedder',
    meaning: 'OTLP/HTTP collector; one setting turns traces on in all three',
  },
  { names: ['REDIS_KEY_PREFIX'], default: '`ctg:`', usedBy: 'authz, embedder, admin', meaning: 'Prefix of every Redis key' },
  {
    names: ['REDIS_TIMEOUT_MS'],
    default: '`500`',
    usedBy: 'authz, admin (at least 2 s)',
    meaning: 'Bound on each Redis command; past it UNAVAILABLE',
  },
  { names: ['KEY_PREFIX'], default: '`CTG`', usedBy: 'authz, admin', meaning: 'API key prefix' },
  {
    names: ['KEY_HASH_SECRET'],
    default: '—',
    usedBy: 'authz, admin',
    meaning: 'HMAC secret for key hashes (≥ 32 characters); wins over the file',
  },
  {
    names: ['KEY_HASH_SECRET_FILE'],
    default: '`.local/key-hash-secret`',
    usedBy: 'authz, admin',
    meaning: 'File holding the secret (`make up` creates it, mode 600)',
  },
  {
    names: ['AUDIT_SECRET', 'AUDIT_SECRET_FILE'],
    default: '`.local/audit-secret`',
    usedBy: 'admin server, CLI',
    meaning:
      "Seed of the audit trail's Ed25519 signing key, never stored in Redis (created locally on first use); its public key is published (`audit public-key`)",
  },
  {
    names: ['ADMIN_HOST', 'ADMIN_PORT'],
    default: '`127.0.0.1` / `9443`',
    usedBy: 'admin server',
    meaning:
      "The admin server's listener (plain HTTP; keep it on loopback or an internal network and put TLS in front); it also serves `GET /metrics`",
  },
  {
    names: ['ADMIN_BOOTSTRAP_NAME'],
    default: '`local-owner`',
    usedBy: 'admin server',
    meaning: 'The owner the `ADMIN_TOKEN_FILE` token is registered for at start (created if missing)',
  },
  {
    names: ['ADMIN_SESSION_TTL_S', 'ADMIN_SESSION_MAX_S'],
    default: '`28800` / `43200`',
    usedBy: 'admin server',
    meaning: 'A console session ends after this long unused / this long after sign-in, however much it is used',
  },
  {
    names: ['ADMIN_TRUSTED_PROXIES'],
    default: '—',
    usedBy: 'admin server',
    meaning:
      "Comma-separated addresses or CIDR ranges of proxies whose `X-Forwarded-For` gives the client's address; unset, the peer's address counts",
  },
  {
    names: ['ADMIN_PUBLIC_URL'],
    default: '—',
    usedBy: 'admin server',
    meaning:
      "The console's origin as browsers reach it; with `https:` its cookies are `Secure`; required with single sign-on (the redirect URI is `<ADMIN_PUBLIC_URL>/api/oidc/callback`)",
  },
  {
    names: ['OIDC_ISSUER'],
    default: '—',
    usedBy: 'admin server',
    meaning: 'An OpenID Connect provider\'s issuer URL: enables "Sign in with single sign-on" ([console.md](console.md))',
  },
  {
    names: ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_CLIENT_SECRET_FILE'],
    default: '—',
    usedBy: 'admin server',
    meaning: "The console's client at that provider (confidential, code flow); the secret as a value or a file",
  },
  {
    names: ['AUDIT_ANCHOR_FILE'],
    default: '`.local/audit-anchor.jsonl`',
    usedBy: 'admin server, CLI',
    meaning: 'Signed checkpoints of the audit chain, outside Redis; `audit verify` checks them',
  },
  {
    names: ['ADMIN_TOKEN', 'ADMIN_TOKEN_FILE'],
    default: '`.local/admin-token` when it exists',
    usedBy: "CLI (the server: the bootstrap owner's token)",
    meaning: 'The administrator token the CLI acts with; required once an administrator exists',
  },
  {
    names: ['KEY_CACHE_TTL_MS'],
    default: '`1000`',
    usedBy: 'authz',
    meaning:
      'How long a key and its organization are cached in-process (0 = off); revocations and organization changes take effect within it',
  },
  {
    names: ['KEY_CACHE_MAX_KEYS', 'KEY_CACHE_MAX_UNKNOWN'],
    default: '`10000` / `50000`',
    usedBy: 'authz',
    meaning: 'Keys that exist, and "not found" answers, held in the key cache (apart: unknown ids never evict a key)',
  },
  {
    names: ['KEY_LOOKUPS_MAX_IN_FLIGHT'],
    default: '`32`',
    usedBy: 'authz',
    meaning: 'Redis lookups of unknown key ids at once; past it such a request gets a fast 503 `authorization_unavailable`',
  },
  {
    names: ['AUTHZ_CALLER_TOKEN', 'AUTHZ_CALLER_TOKEN_FILE'],
    default: '— / `.local/authz-caller-token`',
    usedBy: 'authz, Envoy, stack',
    meaning: 'The secret Envoy sends with every Check; authz answers nobody else (`make up` creates it, mode 600)',
  },
  {
    names: ['AUTHZ_CALLER_AUTH'],
    default: '`token`',
    usedBy: 'authz',
    meaning:
      "How Check's callers prove they are the gateway: `token` (the caller token above), or `mesh` in Istio mode, where the mesh's ingress gateway cannot send it and the mesh's mutual TLS with an AuthorizationPolicy on authz's port must admit only that gateway",
  },
  {
    names: ['METRICS_TOKEN', 'METRICS_TOKEN_FILE'],
    default: '— / `.local/metrics-token`',
    usedBy: 'authz, admin server, Prometheus, stack',
    meaning: "Bearer token authz's and the admin server's `/metrics` require (`make up` creates it, mode 600)",
  },
  { names: ['MODEL_DIR'], default: '`.local/models/default`', usedBy: 'embedder, authz, admin, stack', meaning: 'Model directory' },
  { names: ['MODEL_ID'], default: "the manifest's `id`", usedBy: 'embedder, authz, admin', meaning: 'Public model id' },
  {
    names: ['DEFAULT_RPM', 'DEFAULT_TPM'],
    default: '`600` / `1000000`',
    usedBy: 'authz, admin',
    meaning: 'Limits for organizations without their own',
  },
  { names: ['ORT_INTRA_OP_THREADS'], default: 'number of cores', usedBy: 'embedder', meaning: 'ONNX Runtime threads' },
  {
    names: ['BATCH_MAX_TOKENS'],
    default: "the model's `maxTokens` × 4 rows per ONNX Runtime thread (4 to 16 rows; 4096 for a 512-token model on 2 threads)",
    usedBy: 'embedder',
    meaning: 'Padded tokens per model call (the deploy env keeps 2048, the figure its memory limits were measured at)',
  },
  {
    names: ['BATCH_SESSION'],
    default: '`background`',
    usedBy: 'embedder',
    meaning:
      "`background`: the Batch API's lines run on a model session of their own whose threads run at nice 19, so online work always runs first; `shared`: on the online session between online calls (one copy of the model in memory)",
  },
  { names: ['BATCH_MAX_SIZE'], default: '`32`', usedBy: 'embedder', meaning: 'Inputs per model call' },
  {
    names: ['QUEUE_MAX_INPUTS', 'QUEUE_MAX_TOKENS'],
    default: '`4000` / `2097152`',
    usedBy: 'embedder',
    meaning: 'Queue bounds, all organizations; beyond → 503 `overloaded`',
  },
  {
    names: ['QUEUE_TENANT_MAX_INPUTS', 'QUEUE_TENANT_MAX_TOKENS'],
    default: '`1000` / `524288`',
    usedBy: 'embedder',
    meaning: "One organization's share of the queue; beyond → 503 `overloaded` for that organization only",
  },
  {
    names: ['BATCH_KEK', 'BATCH_KEK_FILE'],
    default: '— / `.local/batch-kek`',
    usedBy: 'embedder, stack',
    meaning:
      "The Batch API's key-encryption keys (the first line seals, both open while rotating), or the file holding them (`make up` creates it, mode 600); without them the Batch API is off (404) and nothing is stored",
  },
  {
    names: ['BATCH_STORE', 'BATCH_STORE_FILE'],
    default: '`dir:.local/batch` / —',
    usedBy: 'embedder, stack',
    meaning:
      'Where batch files live, sealed: `dir:<path>` or a `postgres://` URL; the file form for a URL that holds a password (a Secret)',
  },
  {
    names: ['BATCH_RETENTION_DAYS'],
    default: '`7`',
    usedBy: 'embedder',
    meaning: 'Days a batch file is kept after its upload, or after the batch that used or made it ends',
  },
  {
    names: ['BATCH_FILE_MAX_BYTES', 'BATCH_FILE_MAX_LINES'],
    default: '`209715200` / `50000`',
    usedBy: 'embedder',
    meaning: "The largest batch input file (OpenAI's limits)",
  },
  {
    names: ['BATCH_WORKERS'],
    default: '`4`',
    usedBy: 'embedder',
    meaning: 'Workers per replica running batch lines on the spare capacity',
  },
  {
    names: ['BATCH_LEASE_MS'],
    default: '`60000`',
    usedBy: 'embedder',
    meaning:
      "How long a worker's claim on a segment of lines lasts before another replica may take it over (a crashed replica's work resumes after it)",
  },
  { names: ['BATCH_POLL_MS'], default: '`1000`', usedBy: 'embedder', meaning: 'How often an idle batch worker looks for work' },
  { names: ['BATCH_SWEEP_MS'], default: '`60000`', usedBy: 'embedder', meaning: 'How often expired batch files and batches are removed' },
  { names: ['LOG_LEVEL'], default: '`info`', usedBy: 'embedder, authz, admin server', meaning: 'pino level' },
]);
