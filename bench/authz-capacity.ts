/**
 * Part 3, authz capacity: Authorization/Check calls per second and their latency against one
 * authz process and its Redis, from a real gRPC client with many calls in flight (one channel,
 * as Envoy keeps one). Every call is a full allowed check: key lookup, access, rate limit.
 *   npx tsx bench/authz-capacity.ts --address 127.0.0.1:PORT --key KEY --model ID --caller-token TOKEN [--seconds 8] [--inflight 64] [--authz-pid PID]
 * Prints one JSON line, with the CPU time this client and (given its pid) authz spent in the
 * measured phase.
 */
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { AUTHZ_CALLER_METADATA } from '../contract/headers.ts';
import { protos } from '../authz/src/edge/protos.ts';
import { quantile } from './hey.ts';
import { cpuMs } from './processes.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    address: { type: 'string' },
    key: { type: 'string' },
    model: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    inflight: { type: 'string', default: '64' },
    'authz-pid': { type: 'string', default: '0' },
    'caller-token': { type: 'string', default: '' },
  },
});
const seconds = Number(values.seconds);
const inflight = Number(values.inflight);
const Authorization = protos().envoy.service.auth.v3.Authorization;
const client = new Authorization(values.address as string, grpc.credentials.createInsecure());
// Sent with every Check, as Envoy sends it (authz/src/edge/caller.ts).
const metadata = new grpc.Metadata();
metadata.set(AUTHZ_CALLER_METADATA, values['caller-token'] as string);

// What Envoy sends for POST /v1/embeddings: headers, path, and the body's model as metadata.
const request = {
  attributes: {
    request: {
      http: {
        method: 'POST',
        path: '/v1/embeddings',
        host: 'localhost',
        scheme: 'https',
        protocol: 'HTTP/1.1',
        headers: {
          authorization: `Bearer ${values.key}`,
          'content-type': 'application/json',
          ':path': '/v1/embeddings',
          ':method': 'POST',
        },
      },
    },
    metadata_context: { filter_metadata: { 'ctg.request': { fields: { model: { stringValue: values.model as string } } } } },
  },
};

function check(): Promise<{ ms: number; ok: boolean }> {
  const start = performance.now();
  return new Promise((done) => {
    client.Check(request, metadata, { deadline: Date.now() + 5000 }, (err, res) => {
      done({ ms: performance.now() - start, ok: !err && (res?.status?.code ?? -1) === 0 });
    });
  });
}

async function loop(until: number, into: { ms: number[]; ok: number; failed: number }): Promise<void> {
  while (performance.now() < until) {
    const r = await check();
    into.ms.push(r.ms);
    if (r.ok) into.ok++;
    else into.failed++;
  }
}

// Warm-up: channel, JIT, Lua scripts loaded in Redis.
await loop(performance.now() + 1000, { ms: [], ok: 0, failed: 0 });
const stats = { ms: [] as number[], ok: 0, failed: 0 };
const authzPid = Number(values['authz-pid']);
const authzBefore = authzPid ? cpuMs(authzPid) : 0;
const clientBefore = process.cpuUsage();
const start = performance.now();
await Promise.all(Array.from({ length: inflight }, () => loop(start + seconds * 1000, stats)));
const elapsed = (performance.now() - start) / 1000;
const clientUsed = process.cpuUsage(clientBefore);
const authzCpuMs = authzPid ? cpuMs(authzPid) - authzBefore : Number.NaN;
stats.ms.sort((a, b) => a - b);
client.close();
console.log(
  JSON.stringify({
    checksPerS: stats.ok / elapsed,
    calls: stats.ms.length,
    allowed: stats.ok,
    failed: stats.failed,
    inflight,
    p50Ms: quantile(stats.ms, 0.5),
    p99Ms: quantile(stats.ms, 0.99),
    authzCpuMs,
    clientCpuMs: (clientUsed.user + clientUsed.system) / 1000,
  }),
);
