/**
 * An OTLP/HTTP trace receiver for tests: POST /v1/traces with protobuf (what Envoy and the
 * Node exporters send) or JSON bodies. It keeps every raw body, so a test can look for a canary
 * in the bytes exactly as exported, and decodes spans with the OTLP trace schema (the subset
 * of opentelemetry-proto's trace.proto and common.proto that spans use, same field numbers).
 */
import { createServer, type Server } from 'node:http';
import protobuf from 'protobufjs';

const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
  string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; repeated Event events = 11; repeated Link links = 13; Status status = 15;
}
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7; }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const ExportRequest = protobuf.parse(OTLP_TRACE_PROTO, { keepCase: true }).root.lookupType('otlp.ExportTraceServiceRequest');

/** One received span, flattened: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
  readonly events: ReadonlyArray<{ name: string; attributes: Record<string, unknown> }>;
}

export interface OtlpReceiver {
  readonly endpoint: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** Every request body received so far, as sent. */
  rawBodies(): Buffer[];
  /** Content types the exporters used. */
  contentTypes(): string[];
  stop(): Promise<void>;
}

type Json = Record<string, any>;

const hex = (bytes: unknown): string =>
  bytes instanceof Uint8Array ? Buffer.from(bytes).toString('hex') : typeof bytes === 'string' ? bytes : '';

function plain(value: Json | undefined): unknown {
  if (!value) return undefined;
  const [kind, v] = Object.entries(value).find(([k]) => k.endsWith('_value') || k.endsWith('Value')) ?? [];
  if (kind === undefined) return undefined;
  if (/array/i.test(kind)) return (v.values ?? []).map(plain);
  if (/kvlist/i.test(kind)) return attributes(v.values);
  if (/int/i.test(kind)) return Number(v);
  return v;
}

function attributes(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

// Protobuf decodes to snake_case (keepCase); OTLP/JSON uses lowerCamelCase with hex ids.
function flatten(request: Json): ReceivedSpan[] {
  const pick = (o: Json, snake: string) => o[snake] ?? o[snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())];
  return (pick(request, 'resource_spans') ?? []).flatMap((rs: Json) => {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    return (pick(rs, 'scope_spans') ?? []).flatMap((ss: Json) =>
      (ss.spans ?? []).map(
        (s: Json): ReceivedSpan => ({
          service,
          traceId: hex(pick(s, 'trace_id')),
          spanId: hex(pick(s, 'span_id')),
          parentSpanId: hex(pick(s, 'parent_span_id')),
          name: s.name,
          attributes: attributes(s.attributes),
          events: (s.events ?? []).map((e: Json) => ({ name: e.name, attributes: attributes(e.attributes) })),
        }),
      ),
    );
  });
}

/** Starts a receiver on a free loopback port; its endpoint is the OTLP base URL. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const types: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      bodies.push(body);
      types.push(type);
      const decoded = type.includes('json')
        ? (JSON.parse(body.toString('utf8')) as Json)
        : (ExportRequest.toObject(ExportRequest.decode(body), { longs: String, bytes: Buffer }) as Json);
      received.push(...flatten(decoded));
      // An empty ExportTraceServiceResponse: zero bytes in protobuf, {} in JSON.
      res
        .writeHead(200, { 'content-type': type.includes('json') ? 'application/json' : 'application/x-protobuf' })
        .end(type.includes('json') ? '{}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    rawBodies: () => [...bodies],
    contentTypes: () => [...types],
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
