/**
 * One request, one connected trace, through the real stack (Envoy, authz, the embedder with the
 * generated test model) with tracing switched on by its one setting and every span sent to an
 * OTLP/HTTP receiver inside the test: Envoy's request and upstream spans, authz's Check with its
 * Redis commands, the embedder's request with embed and serialize, all in the caller's trace
 * and each one's parent in the same trace. Then a canary sentence sent through success and
 * every error path appears in no exported byte, span name, attribute, event or log line.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOtlpEndpoint } from '../../envoy/tracing.js';
import { waitFor } from '../support/process.js';
import { orgWithKey, type CreatedKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const CANARY = `Zebracanary ${randomBytes(4).toString('hex')} notes quixotic dyspnoea`;
// Generous: Envoy exports its spans every 5 s, the services every second, on a shared machine.
const EXPORT_BOUND_MS = 30_000;

let receiver: OtlpReceiver;
let stack: Stack;
let key: CreatedKey;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  stack = await startStack(
    join(repoRoot, '.local/models/test'),
    { otlpEndpoint: parseOtlpEndpoint(receiver.endpoint) },
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
  );
  key = orgWithKey(stack, 'trace');
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.stop();
});

const newTraceparent = () => ({ traceId: randomBytes(16).toString('hex'), parentId: randomBytes(8).toString('hex') });
const header = (t: { traceId: string; parentId: string }) => `00-${t.traceId}-${t.parentId}-01`;
const embed = (body: string, headers: Record<string, string> = {}) =>
  stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    body,
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...headers },
  });
const inTrace = (traceId: string) => receiver.spans().filter((s) => s.traceId === traceId);

/** Waits until `traceId` has spans named by every entry of `expected` (service: span name pattern). */
async function waitForTrace(traceId: string, expected: Array<[string, RegExp]>): Promise<ReceivedSpan[]> {
  const missing = () => expected.filter(([service, name]) => !inTrace(traceId).some((s) => s.service === service && name.test(s.name)));
  await waitFor(`spans of trace ${traceId}`, async () => missing().length === 0, EXPORT_BOUND_MS).catch(() => {
    throw new Error(
      `missing ${JSON.stringify(missing().map(([s, n]) => `${s} ${n}`))}; got ${JSON.stringify(inTrace(traceId).map((s) => `${s.service} ${s.name}`))}`,
    );
  });
  return inTrace(traceId);
}

/** Spans whose parent is not a span of the same trace (the trace's roots). */
const roots = (spans: ReceivedSpan[]) => spans.filter((s) => !spans.some((p) => p.spanId === s.parentSpanId));

const FULL_TRACE: Array<[string, RegExp]> = [
  ['envoy', /./],
  ['authz', /^authz Check$/],
  ['authz', /^redis checkLimits$/],
  ['embedder', /^POST \/v1\/embeddings$/],
  ['embedder', /^embed$/],
  ['embedder', /^serialize$/],
  ['embedder', /^settle admit$/],
  ['embedder', /^settle record$/],
];

describe('one request is one connected trace', () => {
  it(
    'the caller traceparent is honoured: every hop joins its trace, each span under another of it',
    async () => {
      const caller = newTraceparent();
      const res = await embed(JSON.stringify({ model: stack.svc.modelId, input: ['Patient denies chest pain.', 'Afebrile.'] }), {
        traceparent: header(caller),
      });
      expect(res.status).toBe(200);
      const spans = await waitForTrace(caller.traceId, FULL_TRACE);
      // Exactly one span hangs off the caller's span (Envoy's request span); everything else hangs off a span of the trace.
      const top = roots(spans);
      expect(top.map((s) => [s.service, s.parentSpanId])).toEqual([['envoy', caller.parentId]]);
      const parentOf = (s: ReceivedSpan) => spans.find((p) => p.spanId === s.parentSpanId)!;
      const check = spans.find((s) => s.name === 'authz Check')!;
      const request = spans.find((s) => s.name === 'POST /v1/embeddings')!;
      expect(parentOf(check).service).toBe('envoy');
      expect(parentOf(request).service).toBe('envoy');
      const byName = (name: string) => spans.find((s) => s.name === name)!;
      for (const name of ['redis lookupKey', 'redis checkLimits']) {
        if (spans.some((s) => s.name === name && parentOf(s) === check)) continue;
        expect.fail(`${name} is not under the Check`);
      }
      for (const name of ['embed', 'serialize', 'settle record']) expect(parentOf(byName(name)), name).toBe(request);
      // Tokens are admitted inside the engine call, after tokenizing and before any model work, on
      // Redis directly: authz has no part in the request after its Check.
      expect(parentOf(byName('settle admit'))).toBe(byName('embed'));
      expect(
        spans
          .filter((s) => s.service === 'authz')
          .map((s) => s.name)
          .sort(),
      ).toEqual(['authz Check', 'redis checkLimits', 'redis lookupKey'].filter((n) => spans.some((s) => s.name === n)));
      // Envoy's request span says which route and that it came over TLS.
      expect(top[0]!.attributes).toMatchObject({ route: 'embeddings', 'tls.version': expect.stringMatching(/^TLSv1\.[23]$/) });
      expect(check.attributes).toMatchObject({ 'authz.outcome': 'allowed' });
      expect(request.attributes).toMatchObject({ 'http.response.status_code': 200 });
    },
    EXPORT_BOUND_MS + 10_000,
  );

  it(
    'without a traceparent Envoy starts the trace, and it is still one connected trace',
    async () => {
      const requestId = `trace-${randomBytes(4).toString('hex')}`;
      expect((await embed(JSON.stringify({ model: stack.svc.modelId, input: 'Stable.' }), { 'x-request-id': requestId })).status).toBe(200);
      let traceId = '';
      await waitFor(
        'the request span',
        async () => {
          traceId = receiver.spans().find((s) => s.service === 'envoy' && Object.values(s.attributes).includes(requestId))?.traceId ?? '';
          return traceId !== '';
        },
        EXPORT_BOUND_MS,
      );
      const spans = await waitForTrace(traceId, FULL_TRACE);
      expect(roots(spans).map((s) => [s.service, s.parentSpanId])).toEqual([['envoy', '']]);
    },
    2 * EXPORT_BOUND_MS + 10_000,
  );

  it('exports over OTLP/HTTP protobuf from all three services', () => {
    expect(new Set(receiver.spans().map((s) => s.service))).toEqual(new Set(['envoy', 'authz', 'embedder']));
    expect(receiver.contentTypes().every((t) => t.startsWith('application/x-protobuf'))).toBe(true);
  });
});

describe('canary: request text reaches no span and no log', () => {
  it(
    'success and every error path: no exported byte, name, attribute, event or log line holds it',
    async () => {
      const model = stack.svc.modelId;
      type Send = (headers: Record<string, string>) => ReturnType<typeof embed>;
      const cases: Array<[number, Send]> = [
        [200, (h) => embed(JSON.stringify({ model, input: [CANARY, `${CANARY} again`] }), h)],
        [400, (h) => embed(JSON.stringify({ model, input: CANARY, encoding_format: CANARY }), h)],
        [400, (h) => embed(JSON.stringify({ model, input: `${CANARY} `.repeat(300) }), h)],
        [400, (h) => embed(`{"model": "${model}", "input": "${CANARY}`, h)],
        [400, (h) => embed(CANARY, { ...h, 'content-type': 'text/plain' })],
        [403, (h) => embed(JSON.stringify({ model: CANARY, input: CANARY }), h)],
        [401, (h) => embed(JSON.stringify({ model, input: CANARY }), { ...h, authorization: `Bearer ${CANARY}` })],
        [413, (h) => embed(JSON.stringify({ model, input: `${CANARY} `.repeat(30_000) }), h)],
        [
          404,
          (h) =>
            stack.request({
              method: 'POST',
              path: '/v1/completions',
              headers: { ...h, authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model, input: CANARY }),
            }),
        ],
        [
          405,
          (h) =>
            stack.request({
              method: 'PUT',
              path: '/v1/embeddings',
              headers: { ...h, authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model, input: CANARY }),
            }),
        ],
        // Text a client puts in the path, the query string or the user agent.
        [
          404,
          (h) =>
            stack.request({
              method: 'GET',
              path: `/v1/${CANARY.replace(/ /g, '-')}?note=${encodeURIComponent(CANARY)}`,
              headers: { ...h, 'user-agent': CANARY },
            }),
        ],
        [
          200,
          (h) =>
            stack.request({
              method: 'POST',
              path: `/v1/embeddings?note=${encodeURIComponent(CANARY)}`,
              body: JSON.stringify({ model, input: 'x' }),
              headers: { ...h, authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'user-agent': CANARY },
            }),
        ],
        [200, (h) => embed(JSON.stringify({ model, input: CANARY }), { ...h, authorization: `Bearer ${limited.key}` })],
        [429, (h) => embed(JSON.stringify({ model, input: CANARY }), { ...h, authorization: `Bearer ${limited.key}` })],
      ];
      // One request a minute: the second is refused by the rate limit.
      const limited = orgWithKey(stack, 'limited', { rpm: 1 });
      const traces: string[] = [];
      const statuses: number[] = [];
      for (const [, send] of cases) {
        const caller = newTraceparent();
        traces.push(caller.traceId);
        statuses.push((await send({ traceparent: header(caller) })).status);
      }
      // The embedder down: Envoy answers 503 upstream_unavailable.
      await stack.stopService('embedder');
      const down = newTraceparent();
      traces.push(down.traceId);
      statuses.push((await embed(JSON.stringify({ model, input: CANARY }), { traceparent: header(down) })).status);
      await stack.startService('embedder', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
      expect(statuses).toEqual([...cases.map(([status]) => status), 503]);
      // Envoy exports last (every 5 s); once each trace has its Envoy span, the services' are in too.
      for (const traceId of traces) await waitForTrace(traceId, [['envoy', /./]]);
      expect(inTrace(traces[0]!).map((s) => s.name)).toEqual(expect.arrayContaining(['authz Check', 'embed', 'serialize']));

      const needle = Buffer.from(CANARY.split(' ')[1]!);
      expect(receiver.rawBodies().filter((body) => body.includes(needle))).toEqual([]);
      const text = JSON.stringify(receiver.spans());
      expect(text).not.toContain(needle.toString());
      expect(text).not.toContain('Zebracanary');
      for (const file of readdirSync(stack.dirs.logDir)) {
        expect(readFileSync(join(stack.dirs.logDir, file), 'utf8'), file).not.toContain('Zebracanary');
      }
    },
    4 * EXPORT_BOUND_MS,
  );
});
