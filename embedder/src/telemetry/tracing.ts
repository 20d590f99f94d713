/**
 * The embedder's traces: the only module that imports the OpenTelemetry SDK. Off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; then each request is a SERVER span continuing the
 * `traceparent` Envoy sends, with the engine's work ("embed": tokenize, queue, inference), the
 * settlement's Redis calls (admit, record, refund) and the response's serialisation
 * as children, exported over OTLP/HTTP (protobuf).
 *
 * Invariant: attributes are route templates, methods from a fixed list, statuses, catalogue
 * codes and counts. No input text, body field, URL or header value is ever an attribute or an
 * event; a span's name is a template too.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SettlementStore } from '../settlement/store.js';
import type { EmbeddingEngine } from '../core/engine.js';
import { methodLabel, routeLabel } from './metrics.js';
import { outcomeOf } from './request-log.js';

/** The tracer name every embedder span is made with (the global one is a no-op while off). */
export const TRACER_NAME = 'embedder';

export interface Tracing {
  readonly tracer: Tracer;
  readonly enabled: boolean;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

/** Spans are exported within this long; short, so a trace is complete soon after its request. */
const EXPORT_DELAY_MS = 1000;

/** Starts the SDK when `endpoint` (an OTLP/HTTP base URL) is set, and registers it globally. */
export function startTracing(endpoint: string | undefined): Tracing {
  if (!endpoint) return { tracer: trace.getTracer(TRACER_NAME), enabled: false, shutdown: async () => undefined };
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'embedder' }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  // AsyncLocalStorage context and the W3C trace-context propagator (traceparent, tracestate).
  provider.register();
  return { tracer: provider.getTracer(TRACER_NAME), enabled: true, shutdown: () => provider.shutdown() };
}

/** Internal routes polled by Prometheus and probes: a span per poll would bury the requests. */
const UNTRACED_ROUTES = new Set(['/metrics', '/ready']);

interface Traced {
  readonly span: Span;
  readonly context: Context;
}

/**
 * Adds the request span to `app`: opened on arrival (child of the caller's `traceparent`),
 * made the active context for the handler (so the engine's and the serialiser's spans are its
 * children), and closed with the status and catalogue code when the response is done.
 */
export function registerTracing(app: FastifyInstance, tracer: Tracer): void {
  const open = new WeakMap<FastifyRequest, Traced>();
  app.addHook('onRequest', (request, _reply, done) => {
    if (UNTRACED_ROUTES.has(request.routeOptions.url ?? '')) {
      done();
      return;
    }
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const method = methodLabel(request.method);
    const route = routeLabel(request.routeOptions.url);
    const span = tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'http.route': route },
      },
      parent,
    );
    open.set(request, { span, context: trace.setSpan(parent, span) });
    done();
  });
  // Fastify calls the handler synchronously from the last preHandler's `done`, so running
  // `done` inside the span's context makes it the handler's active context.
  app.addHook('preHandler', (request, _reply, done) => {
    const traced = open.get(request);
    if (traced) context.with(traced.context, done);
    else done();
  });
  const close = (request: FastifyRequest, status: number | undefined): void => {
    const traced = open.get(request);
    if (!traced) return;
    open.delete(request);
    const code = outcomeOf(request).code;
    if (status !== undefined) traced.span.setAttribute('http.response.status_code', status);
    if (code) traced.span.setAttribute('error.type', code);
    if (status === undefined || status >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? 'aborted' });
    traced.span.end();
  };
  app.addHook('onResponse', async (request, reply) => close(request, reply.statusCode));
  app.addHook('onRequestAbort', async (request) => close(request, undefined));
}

/**
 * The settlement store, each call a CLIENT span on Redis ("settle admit", "settle record",
 * "settle refund", "settle status") with the outcome; ids and counts only, never text.
 */
export function traceSettlement(store: SettlementStore, tracer: Tracer): SettlementStore {
  const traced = <T>(operation: 'admit' | 'record' | 'refund' | 'status', run: () => Promise<T>): Promise<T> =>
    tracer.startActiveSpan(
      `settle ${operation}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'redis', 'db.operation.name': `FCALL ctg_${operation}` },
      },
      async (span) => {
        try {
          const result = await run();
          const kind = typeof result === 'string' ? result : (result as { kind?: unknown } | undefined)?.kind;
          if (typeof kind === 'string' && operation !== 'status') span.setAttribute('settlement.outcome', kind);
          return result;
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'settlement unavailable' });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  return {
    admit: (grant, model, tokens, now) => traced('admit', () => store.admit(grant, model, tokens, now)),
    record: (grant, model, usage, deadline) => traced('record', () => store.record(grant, model, usage, deadline)),
    refund: (grant, model, now) => traced('refund', () => store.refund(grant, model, now)),
    status: (grant) => traced('status', () => store.status(grant)),
    isReady: () => store.isReady(),
    close: () => store.close(),
  };
}

/** Where one request's time went, as the engine may report it with `embedded` (milliseconds). */
interface EngineTiming {
  readonly tokenizeMs?: number;
  readonly queueMs?: number;
  readonly inferenceMs?: number;
}

/**
 * The engine, with each call an "embed" span (inputs, tokens, outcome). When the outcome
 * carries the engine's `timing`, its phases become child spans: tokenize from the call's start;
 * inference (the model's time for its batches) ending at the call's end, and queue (waiting for
 * a batch) just before it, so the token admission between them shows as the gap it is.
 */
export function traceEngine(engine: EmbeddingEngine, tracer: Tracer): EmbeddingEngine {
  const embed: EmbeddingEngine['embed'] = (request) =>
    tracer.startActiveSpan('embed', { attributes: { 'embedder.inputs': request.inputs.length } }, async (span) => {
      const started = Date.now();
      try {
        const outcome = await engine.embed(request);
        span.setAttribute('embedder.outcome', outcome.kind);
        if (outcome.kind === 'embedded') {
          span.setAttribute('embedder.tokens', outcome.promptTokens);
          phaseSpans(tracer, (outcome as { timing?: EngineTiming }).timing ?? {}, started, Date.now());
        }
        return outcome;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'engine failed' });
        throw error;
      } finally {
        span.end();
      }
    });
  return { ...engine, embed };
}

function phaseSpans(tracer: Tracer, timing: EngineTiming, started: number, ended: number): void {
  const ms = (value: number | undefined): number | undefined =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
  const phase = (name: string, from: number, duration: number): void => tracer.startSpan(name, { startTime: from }).end(from + duration);
  const tokenize = ms(timing.tokenizeMs);
  const inference = ms(timing.inferenceMs);
  const queue = ms(timing.queueMs);
  if (tokenize !== undefined) phase('tokenize', started, tokenize);
  if (inference !== undefined) phase('inference', ended - inference, inference);
  if (queue !== undefined) phase('queue', ended - (inference ?? 0) - queue, queue);
}
