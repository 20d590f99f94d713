/**
 * The embedder's settings: the only module that reads `process.env`. Parsed once, validated
 * whole (one error naming every bad variable), frozen.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvReader, readLogLevel, readOtlpEndpoint, type Env, type LogLevel } from '../../contract/env.js';
import { readRedisSettings, type RedisSettings } from '../../contract/redis-target.js';
import { readSecret, readToken } from '../../contract/secrets.js';

export interface EmbedderConfig {
  readonly host: string;
  readonly port: number;
  /** Directory holding model.onnx, tokenizer.json and manifest.json. */
  readonly modelDir: string;
  /** Overrides the manifest's id as the public model id; undefined serves the manifest's. */
  readonly modelId: string | undefined;
  readonly ortIntraOpThreads: number;
  /** Padded tokens (longest input × inputs) one model call may hold. */
  readonly batchMaxTokens: number;
  readonly batchMaxSize: number;
  readonly queueMaxInputs: number;
  readonly queueMaxTokens: number;
  /** One tenant's (organization's) share of the queue; past it that tenant alone gets `overloaded`. */
  readonly queueTenantMaxInputs: number;
  readonly queueTenantMaxTokens: number;
  /** Seconds a client is told to wait (`retry-after`) when the queue is full or the model loads. */
  readonly retryAfterSeconds: number;
  readonly logLevel: LogLevel;
  /** Verifies the grant authz signs for each request (shared with authz only). */
  readonly grantSecret: string;
  /** Where the settlement functions run: the same Redis as authz, as its own ACL user. */
  readonly redis: RedisSettings;
  /** How long one admit, and one record with its retries, may take; past it the request fails closed with 503. */
  readonly settlementTimeoutMs: number;
  /** The bearer token GET /metrics requires (Prometheus sends it); without one, /metrics answers nobody. */
  readonly metricsToken: string | undefined;
  /** On SIGTERM, how long in-flight requests may take to finish before the process exits anyway. */
  readonly drainSeconds: number;
  /** On SIGTERM, how long /ready answers 503 while requests are still served, before the listener closes. */
  readonly drainNoticeMs: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off when unset. */
  readonly otlpEndpoint: string | undefined;
}

/** The longest input a model may take; a batch must always be able to hold one. */
const MAX_INPUT_TOKENS = 512;
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Reads and validates the embedder's variables; throws one ConfigError naming every bad one. */
export function loadConfig(env: Env = process.env): EmbedderConfig {
  const read = new EnvReader(env);
  return read.finish('embedder', {
    host: read.string('EMBEDDER_HOST', '127.0.0.1'),
    port: read.integer('EMBEDDER_PORT', 8081, 0, 65_535),
    modelDir: resolve(read.string('MODEL_DIR', '.local/models/default')),
    modelId: read.optional('MODEL_ID'),
    ortIntraOpThreads: read.integer('ORT_INTRA_OP_THREADS', availableParallelism(), 1, 256),
    // Measured (BENCHMARKS.md): long inputs run faster in small batches on CPU, and 32 × 512-token
    // batches took the resident memory to 4 GB; 2,048 still fits 32 short sentences per call.
    batchMaxTokens: read.integer('BATCH_MAX_TOKENS', 2_048, MAX_INPUT_TOKENS),
    batchMaxSize: read.integer('BATCH_MAX_SIZE', 32, 1, 4096),
    // A tenant's share holds one request of 1,000 inputs × 512 tokens; the whole queue holds four
    // such shares, so one tenant at its share leaves room for the others (about 16 MB of token ids).
    queueMaxInputs: read.integer('QUEUE_MAX_INPUTS', 4_000, 1),
    queueMaxTokens: read.integer('QUEUE_MAX_TOKENS', 2_097_152, 1),
    queueTenantMaxInputs: read.integer('QUEUE_TENANT_MAX_INPUTS', 1_000, 1),
    queueTenantMaxTokens: read.integer('QUEUE_TENANT_MAX_TOKENS', 524_288, 1),
    retryAfterSeconds: read.integer('RETRY_AFTER_SECONDS', 1, 1, 3600),
    logLevel: readLogLevel(read),
    grantSecret: readSecret(read, 'GRANT_SECRET', '.local/grant-secret', repoRoot),
    redis: readRedisSettings(read),
    settlementTimeoutMs: read.integer('SETTLEMENT_TIMEOUT_MS', 1_000, 10, 60_000),
    metricsToken: readToken(read, 'METRICS_TOKEN', '.local/metrics-token', repoRoot),
    // The longest request (1,000 × 512 tokens) takes minutes on 2 cores; Envoy's route allows 600 s.
    drainSeconds: read.integer('EMBEDDER_DRAIN_S', 600, 0, 3600),
    // Off by default: Kubernetes takes a pod out of rotation itself (preStop sleep, new pod IP).
    drainNoticeMs: read.integer('EMBEDDER_DRAIN_NOTICE_MS', 0, 0, 60_000),
    otlpEndpoint: readOtlpEndpoint(read),
  });
}
