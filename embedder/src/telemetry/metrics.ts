/**
 * Prometheus metrics: the only importer of prom-client. Each app gets its own Registry (never
 * the global default), so tests and several apps in one process do not collide.
 *
 * Invariant: no label is ever derived from request content. Routes are templates (unmatched
 * paths share one label), methods come from a fixed list, codes from the problem catalogue;
 * the model, the URL and the input text are never labels.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BatchStats } from '../core/batcher.js';
import type { EmbeddingEngine } from '../core/engine.js';
import type { SettlementStore } from '../settlement/store.js';

/** The settlement's calls on Redis, and how one ended (a fixed list: the label set stays bounded). */
const SETTLEMENT_OPERATIONS = ['admit', 'record', 'refund', 'status'] as const;
type SettlementOperation = (typeof SETTLEMENT_OPERATIONS)[number];
type SettlementOutcome =
  | 'ok'
  | 'over_limit'
  | 'over_budget'
  | 'too_large'
  | 'expired'
  | 'used'
  | 'invalid'
  | 'late'
  | 'not_admitted'
  | 'unreplicated'
  | 'unavailable';

/** What the app learned about one finished request (all safe: counts, template, code). */
export interface RequestFacts {
  /** The matched route template (Fastify style), or undefined when no route matched. */
  readonly route: string | undefined;
  readonly method: string;
  readonly status: number;
  readonly seconds: number;
  /** Catalogue problem code; absent on success. */
  readonly code?: string | undefined;
  readonly inputs?: number | undefined;
  readonly tokens?: number | undefined;
}

/** Inputs and tokens waiting for the model. */
export interface QueueDepth {
  readonly inputs: number;
  readonly tokens: number;
}

export interface EmbedderMetrics {
  /** The exposition format's content type, from the registry. */
  readonly contentType: string;
  observeRequest(facts: RequestFacts): void;
  /** How long one embedded request waited for its first batch. */
  observeQueueWait(seconds: number): void;
  /** One model call; bound, so it can be handed to the engine as a callback. */
  readonly observeBatch: (stats: BatchStats) => void;
  /** Where the queue gauges read from at scrape time. */
  watchQueue(read: () => QueueDepth): void;
  /** One settlement call on Redis: its outcome and duration. */
  observeSettlement(operation: SettlementOperation, outcome: SettlementOutcome, seconds: number): void;
  /** The text exposition of every metric. */
  render(): Promise<string>;
}

/** The label every request that matched no route shares (a raw path could carry anything). */
const UNMATCHED_ROUTE = 'unmatched';

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT']);

/** A route label: the template in OpenAPI style (`:id` → `{id}`), or "unmatched". */
export function routeLabel(template: string | undefined): string {
  if (template === undefined || template === '') return UNMATCHED_ROUTE;
  return template.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** A method label from a fixed list ("other" for anything else), so the label set stays bounded. */
export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'other';
}

/** The labels of `embedder_requests_total` for one request (pure). */
export function requestLabels(facts: RequestFacts): { route: string; method: string; status: string; code: string } {
  return { route: routeLabel(facts.route), method: methodLabel(facts.method), status: String(facts.status), code: facts.code ?? '' };
}

/**
 * How often Node's default metrics sample the event loop's delay (prom-client's default is every
 * 10 ms). Each sample is a timer that wakes an idle process: at 10 ms, 98 wake-ups and 6.6 ms of
 * CPU a second per idle process; at 100 ms, 10 and 1.1 ms (measured 2026-11-27). Ten samples a
 * second still give a 15 s scrape 150 of them, and any stall of 100 ms or more delays one.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * Builds the metrics on a fresh Registry, with Node's default process metrics. `queueLimits`
 * (QUEUE_MAX_INPUTS, QUEUE_MAX_TOKENS) are exported beside the depth, so saturation is one
 * division for an alert or an autoscaler.
 */
export function createEmbedderMetrics(queueLimits?: QueueDepth): EmbedderMetrics {
  const register = new Registry();
  const registers = [register];
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const requests = new Counter({
    name: 'embedder_requests_total',
    help: 'Requests by route template, method, status and problem code ("" on success).',
    labelNames: ['route', 'method', 'status', 'code'],
    registers,
  });
  const duration = new Histogram({
    name: 'embedder_request_duration_seconds',
    help: 'Request duration by route template and status.',
    labelNames: ['route', 'status'],
    registers,
  });
  const inputs = new Counter({ name: 'embedder_inputs_total', help: 'Inputs embedded (200 responses).', registers });
  const tokens = new Counter({ name: 'embedder_tokens_total', help: 'Tokens embedded, as counted in usage (200 responses).', registers });
  const overloaded = new Counter({
    name: 'embedder_overloaded_total',
    help: 'Requests refused with 503 overloaded (queue full).',
    registers,
  });
  const batchSize = new Histogram({
    name: 'embedder_batch_size',
    help: 'Inputs per model call.',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers,
  });
  const batchPadded = new Histogram({
    name: 'embedder_batch_padded_tokens',
    help: 'Padded tokens (longest input x inputs) per model call.',
    buckets: [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384],
    registers,
  });
  // Waiting, not working: what autoscaling should act on (the model time is per batch above).
  const queueWait = new Histogram({
    name: 'embedder_queue_wait_seconds',
    help: 'Seconds an embedded request waited in the queue before its first input entered a model call.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const settlements = new Counter({
    name: 'embedder_settlement_calls_total',
    help: 'Settlement calls on Redis (admit, record, refund, status) by outcome.',
    labelNames: ['operation', 'outcome'],
    registers,
  });
  const settlementDuration = new Histogram({
    name: 'embedder_settlement_duration_seconds',
    help: 'Duration of one settlement call (one Redis round trip) by operation.',
    labelNames: ['operation'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const usageWrites = new Counter({
    name: 'embedder_usage_writes_total',
    help: 'Usage records written (record calls answered "recorded").',
    registers,
  });
  const usageFailures = new Counter({
    name: 'embedder_usage_write_failures_total',
    help: 'Record calls that did not write (Redis unreachable, slow, or past the deadline): the request is answered 503 unless a retry writes it.',
    registers,
  });
  // Zero-initialised, so rate() and increase() see the first event and dashboards show 0.
  for (const operation of SETTLEMENT_OPERATIONS) settlements.inc({ operation, outcome: 'ok' }, 0);
  const inference = new Histogram({
    name: 'embedder_inference_duration_seconds',
    help: 'Duration of one model call (one batch).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });

  let readQueue: () => QueueDepth = () => ({ inputs: 0, tokens: 0 });
  // Read at scrape time: the batcher's counts are exact, so nothing updates on every change.
  new Gauge({
    name: 'embedder_queue_inputs',
    help: 'Inputs waiting for the model.',
    registers,
    collect() {
      this.set(readQueue().inputs);
    },
  });
  new Gauge({
    name: 'embedder_queue_tokens',
    help: 'Tokens waiting for the model.',
    registers,
    collect() {
      this.set(readQueue().tokens);
    },
  });
  if (queueLimits) {
    new Gauge({
      name: 'embedder_queue_max_inputs',
      help: 'Inputs the queue admits (QUEUE_MAX_INPUTS); past it requests get 503 overloaded.',
      registers,
    }).set(queueLimits.inputs);
    new Gauge({
      name: 'embedder_queue_max_tokens',
      help: 'Tokens the queue admits (QUEUE_MAX_TOKENS); past it requests get 503 overloaded.',
      registers,
    }).set(queueLimits.tokens);
  }

  return {
    contentType: register.contentType,
    observeRequest(facts) {
      const labels = requestLabels(facts);
      requests.inc(labels);
      duration.observe({ route: labels.route, status: labels.status }, facts.seconds);
      if (facts.code === 'overloaded') overloaded.inc();
      if (facts.status === 200 && facts.inputs !== undefined && facts.tokens !== undefined) {
        inputs.inc(facts.inputs);
        tokens.inc(facts.tokens);
      }
    },
    observeQueueWait: (seconds) => queueWait.observe(seconds),
    observeBatch: (stats) => {
      batchSize.observe(stats.size);
      batchPadded.observe(stats.paddedTokens);
      inference.observe(stats.seconds);
    },
    watchQueue(read) {
      readQueue = read;
    },
    observeSettlement(operation, outcome, seconds) {
      settlements.inc({ operation, outcome });
      settlementDuration.observe({ operation }, seconds);
      if (operation === 'record') (outcome === 'ok' ? usageWrites : usageFailures).inc();
    },
    render: () => register.metrics(),
  };
}

/**
 * The engine, reporting each embedded request's queue wait (from the engine's `timing`, when it
 * gives one) to `metrics`; everything else passes through.
 */
export function measureEngine(engine: EmbeddingEngine, metrics: Pick<EmbedderMetrics, 'observeQueueWait'>): EmbeddingEngine {
  return {
    ...engine,
    async embed(request) {
      const outcome = await engine.embed(request);
      const queueMs = (outcome as { timing?: { queueMs?: unknown } }).timing?.queueMs;
      if (outcome.kind === 'embedded' && typeof queueMs === 'number' && Number.isFinite(queueMs) && queueMs >= 0)
        metrics.observeQueueWait(queueMs / 1000);
      return outcome;
    },
  };
}

/** The settlement store, each call counted by outcome and timed; results pass through unchanged. */
export function measureSettlement(store: SettlementStore, metrics: Pick<EmbedderMetrics, 'observeSettlement'>): SettlementStore {
  const measured = async <T>(
    operation: SettlementOperation,
    run: () => Promise<T>,
    outcomeOf: (result: T) => SettlementOutcome,
  ): Promise<T> => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await run();
      metrics.observeSettlement(operation, outcomeOf(result), seconds());
      return result;
    } catch (error) {
      metrics.observeSettlement(operation, 'unavailable', seconds());
      throw error;
    }
  };
  return {
    admit: (grant, model, tokens, now) =>
      measured(
        'admit',
        () => store.admit(grant, model, tokens, now),
        (r) => (r.kind === 'admitted' ? 'ok' : r.kind),
      ),
    record: (grant, model, usage, deadline) =>
      measured(
        'record',
        () => store.record(grant, model, usage, deadline),
        (r) => (r === 'recorded' ? 'ok' : r),
      ),
    refund: (grant, model, now) =>
      measured(
        'refund',
        () => store.refund(grant, model, now),
        () => 'ok',
      ),
    status: (grant) =>
      measured(
        'status',
        () => store.status(grant),
        () => 'ok',
      ),
    isReady: () => store.isReady(),
    close: () => store.close(),
  };
}
