/**
 * The embedder's settings: the only module that reads settings from `process.env`
 * (model/ort-telemetry.ts only sets ORT_DISABLE_TELEMETRY for ONNX Runtime's native code;
 * test/contract/env-readers.unit.test.ts checks). Parsed once, validated whole (one error naming
 * every bad variable), frozen.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { repoRoot } from '../../contract/repo-root.js';
import { settingDefault } from '../../contract/settings.js';
import { EnvReader, readLogLevel, readOtlpEndpoint, type Env, type LogLevel } from '../../contract/env.js';
import { readRedisSettings, type RedisSettings } from '../../contract/redis-target.js';
import { readSecretValues, readTokenValues, type SecretValues } from '../../contract/secrets.js';
import { usableCores } from '../../contract/usable-cores.js';

export interface EmbedderConfig {
  readonly host: string;
  readonly port: number;
  /** Directory holding model.onnx, tokenizer.json and manifest.json. */
  readonly modelDir: string;
  /** Overrides the manifest's id as the public model id; undefined serves the manifest's. */
  readonly modelId: string | undefined;
  /** Online model sessions, each running one call at a time beside the others (core/batcher.ts). */
  readonly modelSessions: number;
  /** ONNX Runtime threads of each session. */
  readonly ortIntraOpThreads: number;
  /**
   * Padded tokens (longest input × inputs) one model call may hold; undefined: derived from
   * the model's length and the threads (core/batch-budget.ts).
   */
  readonly batchMaxTokens: number | undefined;
  readonly batchMaxSize: number;
  readonly queueMaxInputs: number;
  readonly queueMaxTokens: number;
  /** One tenant's (organization's) share of the queue; past it that tenant alone gets `overloaded`. */
  readonly queueTenantMaxInputs: number;
  readonly queueTenantMaxTokens: number;
  /** Seconds a client is told to wait (`retry-after`) when the queue is full or the model loads. */
  readonly retryAfterSeconds: number;
  readonly logLevel: LogLevel;
  /** Verifies the grant authz signs for each request (shared with authz only); every accepted value. */
  readonly grantSecret: SecretValues;
  /** Where the settlement functions run: the same Redis as authz, as its own ACL user. */
  readonly redis: RedisSettings;
  /** How long one admit, and one record with its retries, may take; past it the request fails closed with 503. */
  readonly settlementTimeoutMs: number;
  /**
   * Replicas that must hold a usage record before its 200 (SETTLEMENT_MIN_REPLICAS; 0 for a
   * standalone Redis) and how long to wait for them (SETTLEMENT_WAIT_MS): fewer in time, the
   * record is voided and the request answered 503, so a failover loses no answered request.
   */
  readonly settlementMinReplicas: number;
  readonly settlementWaitMs: number;
  /** The bearer token GET /metrics requires (Prometheus sends it); without one, /metrics answers nobody. */
  readonly metricsToken: SecretValues | undefined;
  /** On SIGTERM, how long in-flight requests may take to finish before the process exits anyway. */
  readonly drainSeconds: number;
  /** On SIGTERM, how long /ready answers 503 while requests are still served, before the listener closes. */
  readonly drainNoticeMs: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off when unset. */
  readonly otlpEndpoint: string | undefined;
  /** The Batch API's settings; undefined (the API off) without a key-encryption key. */
  readonly batch: BatchConfig | undefined;
}

/** The Batch API's settings; without a key-encryption key the API is off (its routes answer 404). */
export interface BatchConfig {
  /** `dir:<path>` (the embedded default) or a `postgres://` URL. */
  readonly store: { readonly kind: 'dir'; readonly path: string } | { readonly kind: 'postgres'; readonly url: string };
  /** The key-encryption keys' text (a Secret file): the first seals, both open. */
  readonly keys: string;
  /** How long files are kept after upload, or after the batch that uses or made them ends. */
  readonly retentionSeconds: number;
  readonly maxFileBytes: number;
  readonly maxFileLines: number;
  readonly workers: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly sweepMs: number;
  /** `background`: the lane's own model session at the lowest OS priority; `shared`: the online session. */
  readonly session: 'background' | 'shared';
  /** While online requests are about, the lane rests this many times each call's duration after it (core/batcher.ts). */
  readonly laneRest: number;
}

/** One or two keys, one per line: 64 hex characters or base64 of 32 bytes each (batch/sealing.ts parses them). */
const KEY_LINES = /^\s*([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)\s*(\n\s*([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)\s*)?$/;

function readKeyText(read: EnvReader, root: string): string | undefined {
  const direct = read.optional('BATCH_KEK');
  const named = read.optional('BATCH_KEK_FILE');
  const file = resolve(root, read.string('BATCH_KEK_FILE'));
  if (direct === undefined && !existsSync(file)) {
    if (named !== undefined) read.problem('BATCH_KEK_FILE', 'name a file that exists', file);
    return undefined;
  }
  const text = direct ?? readFileSync(file, 'utf8');
  if (KEY_LINES.test(text)) return text;
  read.problem(
    direct !== undefined ? 'BATCH_KEK' : `BATCH_KEK_FILE (${file})`,
    'hold one or two keys, one per line, each 64 hex characters or base64 of 32 bytes',
  );
  return undefined;
}

function readStore(read: EnvReader, root: string): BatchConfig['store'] {
  // A PostgreSQL URL holds a password: a deployment gives it as a Secret file (BATCH_STORE_FILE).
  const file = read.optional('BATCH_STORE_FILE');
  if (file !== undefined && !existsSync(resolve(root, file))) read.problem('BATCH_STORE_FILE', 'name a file that exists', file);
  const fromFile = file !== undefined && existsSync(resolve(root, file)) ? readFileSync(resolve(root, file), 'utf8').trim() : undefined;
  const raw = fromFile ?? read.string('BATCH_STORE');
  if (/^postgres(ql)?:\/\/\S+$/.test(raw)) return { kind: 'postgres', url: raw };
  if (raw.startsWith('dir:') && raw.length > 4) return { kind: 'dir', path: resolve(root, raw.slice(4)) };
  read.problem('BATCH_STORE', 'be dir:<path> or a postgres:// URL', raw.startsWith('dir:') ? raw : '(hidden)');
  return { kind: 'dir', path: resolve(root, settingDefault('BATCH_STORE').replace(/^dir:/, '')) };
}

/** The Batch API's settings (BATCH_*), or undefined (the API off) when no key-encryption key is given. */
function readBatchConfig(read: EnvReader, root: string): BatchConfig | undefined {
  const keys = readKeyText(read, root);
  const store = readStore(read, root);
  const keyFile = read.optional('BATCH_KEK_FILE');
  // The key must not lie beside the data it protects: a copy of the directory would hold both.
  if (store.kind === 'dir' && keyFile !== undefined) {
    const inside = relative(store.path, resolve(root, keyFile));
    if (!inside.startsWith('..') && !isAbsolute(inside)) read.problem('BATCH_KEK_FILE', 'lie outside the BATCH_STORE directory', keyFile);
  }
  const config = {
    store,
    retentionSeconds: read.integer('BATCH_RETENTION_DAYS', 1, 3650) * 86_400,
    maxFileBytes: read.integer('BATCH_FILE_MAX_BYTES', 1024, 1024 * 1024 * 1024),
    maxFileLines: read.integer('BATCH_FILE_MAX_LINES', 1, 1_000_000),
    workers: read.integer('BATCH_WORKERS', 1, 64),
    leaseMs: read.integer('BATCH_LEASE_MS', 1_000, 3_600_000),
    pollMs: read.integer('BATCH_POLL_MS', 10, 60_000),
    sweepMs: read.integer('BATCH_SWEEP_MS', 100, 3_600_000),
    session: read.oneOf('BATCH_SESSION', ['background', 'shared'] as const),
    laneRest: read.integer('BATCH_LANE_REST', 0, 10),
  };
  return keys ? { ...config, keys } : undefined;
}

/** The longest input a model may take; a batch must always be able to hold one. */
const MAX_INPUT_TOKENS = 512;

/**
 * Sessions × threads, both defaulting to fill the usable cores (a CPU limit counts): one thread
 * per session unless sessions are given (core/batcher.ts says why calls side by side beat one
 * call across the cores).
 */
function modelThreads(read: EnvReader): Pick<EmbedderConfig, 'modelSessions' | 'ortIntraOpThreads'> {
  const cores = usableCores();
  const sessions = read.optionalInteger('MODEL_SESSIONS', 1, 64);
  const threads = read.optionalInteger('ORT_INTRA_OP_THREADS', 1, 256) ?? (sessions ? Math.max(1, Math.floor(cores / sessions)) : 1);
  return { modelSessions: sessions ?? Math.max(1, Math.floor(cores / threads)), ortIntraOpThreads: threads };
}

/** Reads and validates the embedder's variables; throws one ConfigError naming every bad one. */
export function loadConfig(env: Env = process.env): EmbedderConfig {
  const read = new EnvReader(env);
  const redis = readRedisSettings(read);
  const settlementMinReplicas = read.integer('SETTLEMENT_MIN_REPLICAS', 0, 5);
  return read.finish('embedder', {
    host: read.string('EMBEDDER_HOST'),
    port: read.integer('EMBEDDER_PORT', 0, 65_535),
    // From the repository (an image's app folder), as authz, admin and the stack read it.
    modelDir: resolve(repoRoot, read.string('MODEL_DIR')),
    modelId: read.optional('MODEL_ID'),
    ...modelThreads(read),
    // Unset: the model's length × 2 rows per thread of a session (core/batch-budget.ts argues it).
    batchMaxTokens: read.optionalInteger('BATCH_MAX_TOKENS', MAX_INPUT_TOKENS),
    batchMaxSize: read.integer('BATCH_MAX_SIZE', 1, 4096),
    queueMaxInputs: read.integer('QUEUE_MAX_INPUTS', 1),
    queueMaxTokens: read.integer('QUEUE_MAX_TOKENS', 1),
    queueTenantMaxInputs: read.integer('QUEUE_TENANT_MAX_INPUTS', 1),
    queueTenantMaxTokens: read.integer('QUEUE_TENANT_MAX_TOKENS', 1),
    retryAfterSeconds: read.integer('RETRY_AFTER_SECONDS', 1, 3600),
    logLevel: readLogLevel(read),
    grantSecret: readSecretValues(read, 'GRANT_SECRET', repoRoot),
    redis,
    settlementTimeoutMs: read.integer('SETTLEMENT_TIMEOUT_MS', 10, 60_000),
    settlementMinReplicas,
    // Bounded well under the record's void window (settlement.lua VOID_WINDOW_MS, 5 s).
    settlementWaitMs: read.integer('SETTLEMENT_WAIT_MS', 10, 2_000),
    metricsToken: readTokenValues(read, 'METRICS_TOKEN', repoRoot),
    drainSeconds: read.integer('EMBEDDER_DRAIN_S', 0, 3600),
    drainNoticeMs: read.integer('EMBEDDER_DRAIN_NOTICE_MS', 0, 60_000),
    otlpEndpoint: readOtlpEndpoint(read),
    batch: readBatchConfig(read, repoRoot),
  });
}
