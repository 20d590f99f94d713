/**
 * The embedder's settings: the only module that reads `process.env`. Parsed once, validated
 * whole (one error naming every bad variable), frozen.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

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
  /** host:port of authz's Admission service (token limits and usage records). */
  readonly authzAddress: string;
  /** Deadline of one Admission call; past it the request fails closed with 503. */
  readonly admissionTimeoutMs: number;
  /** Tries of the (idempotent) usage Record before a finished request is refused with 503. */
  readonly admissionRecordAttempts: number;
  /** On SIGTERM, how long in-flight requests may take to finish before the process exits anyway. */
  readonly drainSeconds: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); tracing is off when unset. */
  readonly otlpEndpoint: string | undefined;
}

/** The longest input a model may take; a batch must always be able to hold one. */
const MAX_INPUT_TOKENS = 512;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Readonly<Record<string, string | undefined>>;

/** Reads and validates the embedder's variables; throws one error naming every bad one. */
export function loadConfig(env: Env = process.env): EmbedderConfig {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
      return fallback;
    }
    return value;
  };
  const text = (name: string, fallback: string): string => {
    const raw = env[name];
    return raw === undefined || raw.trim() === '' ? fallback : raw.trim();
  };

  const logLevel = text('LOG_LEVEL', 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const modelId = env.MODEL_ID?.trim() || undefined;
  const otlpEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
  if (otlpEndpoint !== undefined && !/^https?:\/\/[^\s/]+\/?$/.test(otlpEndpoint)) {
    problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s):// base URL (host and port, no path)');
  }

  const config: EmbedderConfig = {
    host: text('EMBEDDER_HOST', '127.0.0.1'),
    port: int('EMBEDDER_PORT', 8081, 0, 65_535),
    modelDir: resolve(text('MODEL_DIR', '.local/models/default')),
    modelId,
    ortIntraOpThreads: int('ORT_INTRA_OP_THREADS', availableParallelism(), 1, 256),
    // Measured (BENCHMARKS.md): long inputs run faster in small batches on CPU, and 32 × 512-token
    // batches took the resident memory to 4 GB; 2,048 still fits 32 short sentences per call.
    batchMaxTokens: int('BATCH_MAX_TOKENS', 2_048, MAX_INPUT_TOKENS),
    batchMaxSize: int('BATCH_MAX_SIZE', 32, 1, 4096),
    // A tenant's share holds one request of 1,000 inputs × 512 tokens; the whole queue holds four
    // such shares, so one tenant at its share leaves room for the others (about 16 MB of token ids).
    queueMaxInputs: int('QUEUE_MAX_INPUTS', 4_000, 1),
    queueMaxTokens: int('QUEUE_MAX_TOKENS', 2_097_152, 1),
    queueTenantMaxInputs: int('QUEUE_TENANT_MAX_INPUTS', 1_000, 1),
    queueTenantMaxTokens: int('QUEUE_TENANT_MAX_TOKENS', 524_288, 1),
    retryAfterSeconds: int('RETRY_AFTER_SECONDS', 1, 1, 3600),
    logLevel,
    authzAddress: text('AUTHZ_ADDRESS', '127.0.0.1:9191'),
    admissionTimeoutMs: int('ADMISSION_TIMEOUT_MS', 1_000, 1, 60_000),
    admissionRecordAttempts: int('ADMISSION_RECORD_ATTEMPTS', 3, 1, 10),
    // The longest request (1,000 × 512 tokens) takes minutes on 2 cores; Envoy's route allows 600 s.
    drainSeconds: int('EMBEDDER_DRAIN_S', 600, 0, 3600),
    otlpEndpoint,
  };
  if (problems.length > 0) {
    throw new Error(`invalid embedder configuration:\n  - ${problems.join('\n  - ')}`);
  }
  return Object.freeze(config);
}
