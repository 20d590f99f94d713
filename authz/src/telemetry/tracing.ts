/**
 * authz's traces: the only module that imports the OpenTelemetry SDK. Off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; then every Check is a SERVER span, continuing the trace
 * Envoy's ext_authz call carries in its `traceparent` metadata, and every Admission call one
 * continuing the embedder's, each with one CLIENT span per Redis command under it, exported
 * over OTLP/HTTP (protobuf).
 *
 * Invariant: attributes are fixed strings, the outcome and the catalogue code. Nothing from a
 * CheckRequest (headers, path, key) or a ticket (ids) is ever an attribute or an event.
 */
import * as grpc from '@grpc/grpc-js';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { CheckRequest__Output } from '../../generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse } from '../../generated/envoy/service/auth/v3/CheckResponse.js';
import { codeLabel } from './metrics.js';
import { checkOutcome, observeCommands } from './instrument.js';

type CheckHandler = grpc.handleUnaryCall<CheckRequest__Output, CheckResponse>;

export interface Tracing {
  /** A no-op tracer while tracing is off. */
  readonly tracer: Tracer;
  readonly enabled: boolean;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

/** Spans are exported within this long; short, so a trace is complete soon after its request. */
const EXPORT_DELAY_MS = 1000;

/** Starts the SDK when `endpoint` (an OTLP/HTTP base URL) is set, and registers it globally. */
export function startTracing(endpoint: string | undefined, serviceName = 'authz'): Tracing {
  if (!endpoint) return { tracer: trace.getTracer(serviceName), enabled: false, shutdown: async () => undefined };
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  // AsyncLocalStorage context and the W3C trace-context propagator (traceparent, tracestate).
  provider.register();
  return { tracer: provider.getTracer(serviceName), enabled: true, shutdown: () => provider.shutdown() };
}

/** Runs `handler` as a SERVER span named `name`, child of the caller's `traceparent` metadata; `finish` reads the answer. */
function serverSpan<Req, Res>(
  tracer: Tracer,
  name: string,
  attributes: Attributes,
  handler: grpc.handleUnaryCall<Req, Res>,
  finish: (span: Span, error: Partial<grpc.StatusObject> | null, response: Res | null | undefined) => void,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const parent = propagation.extract(ROOT_CONTEXT, metadataCarrier(call.metadata));
    const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', ...attributes } }, parent);
    context.with(trace.setSpan(parent, span), () =>
      handler(call, (error, response) => {
        span.setAttribute('rpc.grpc.status_code', error?.code ?? grpc.status.OK);
        finish(span, error, response);
        span.end();
        callback(error, response);
      }),
    );
  };
}

/** The Check handler as a SERVER span, child of Envoy's `traceparent` when it sent one. */
export function traceCheck(handler: CheckHandler, tracer: Tracer): CheckHandler {
  const attributes = { 'rpc.service': 'envoy.service.auth.v3.Authorization', 'rpc.method': 'Check' };
  return serverSpan(tracer, 'authz Check', attributes, handler, (span, error, response) => {
    const { outcome, code } = checkOutcome(error, response ?? undefined);
    span.setAttribute('authz.outcome', outcome);
    if (outcome === 'denied') span.setAttribute('authz.code', codeLabel(code) || 'unknown');
    if (outcome === 'unavailable' || outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  });
}

/** The store, with a CLIENT span for each command made inside a traced request (none outside one). */
export function traceStore<T extends object>(store: T, tracer: Tracer): T {
  return observeCommands(store, (command, result) => {
    if (!trace.getActiveSpan()) return;
    const span = tracer.startSpan(`redis ${command}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system': 'redis', 'db.operation.name': command },
    });
    result.then(
      () => span.end(),
      () => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'store unavailable' });
        span.end();
      },
    );
  });
}

// gRPC metadata as a plain carrier: text values only (binary `-bin` entries never hold trace context).
function metadataCarrier(metadata: grpc.Metadata): Record<string, string> {
  const carrier: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) if (typeof value === 'string') carrier[key] = value;
  return carrier;
}
