/**
 * Check latency and throughput of one authz process: starts `authz/src/main.ts` on a free port
 * against the local Redis (its own key prefix, purged after), creates an organization with
 * limits high enough never to refuse, then sends allowed CheckRequests shaped like Envoy's
 * from a real @grpc/grpc-js client at a fixed concurrency.
 *
 *   npx tsx bench/authz-check.ts [total=20000] [concurrency=64]
 *
 * Prints p50/p90/p99/max latency (ms) and checks/s; writes bench/results/authz-check.json.
 */
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { loadavg } from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { protos } from '../authz/src/edge/protos.js';
import type { AuthorizationClient } from '../authz/generated/envoy/service/auth/v3/Authorization.js';
import { connectedStore } from '../test/support/redis-store.js';
import { callerMetadata, envoyCheck, TEST_CALLER_TOKEN, TEST_MODEL, TEST_SECRET } from '../test/support/grpc-authz.js';
import { addKey, addOrg } from '../test/authz/fixtures.js';
import { repoRoot } from '../contract/repo-root.js';

const total = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 64);

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const prefix = `authz-bench:${randomBytes(4).toString('hex')}:`;
  const port = await freePort();
  const store = await connectedStore(prefix);
  // authz's log lines go to stderr: stdout carries only this script's JSON result.
  const authz = spawn(process.execPath, ['--import', 'tsx', 'authz/src/main.ts'], {
    cwd: repoRoot,
    stdio: ['ignore', 2, 'inherit'],
    env: {
      ...process.env,
      AUTHZ_PORT: String(port),
      REDIS_KEY_PREFIX: prefix,
      KEY_HASH_SECRET: TEST_SECRET,
      GRANT_SECRET: randomBytes(24).toString('hex'),
      MODEL_ID: TEST_MODEL,
      LOG_LEVEL: 'warn',
      AUTHZ_CALLER_TOKEN: TEST_CALLER_TOKEN,
      METRICS_TOKEN: TEST_CALLER_TOKEN,
    },
  });
  const client = new (protos().envoy.service.auth.v3.Authorization)(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as AuthorizationClient;
  try {
    await addOrg(store, 'bench', { rpm: 100_000_000, tpm: 1_000_000_000 });
    const { key } = await addKey(store, 'bench');
    await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 30_000, (e) => (e ? reject(e) : resolve())));
    const request = envoyCheck({ authorization: `Bearer ${key}` });
    const once = () =>
      new Promise<number>((resolve, reject) => {
        const start = process.hrtime.bigint();
        client.Check(request, callerMetadata(), (error, response) => {
          if (error || response?.http_response !== 'ok_response') reject(error ?? new Error('not allowed'));
          else resolve(Number(process.hrtime.bigint() - start) / 1e6);
        });
      });
    for (let i = 0; i < 500; i += 1) await once(); // warm-up: JIT, script cache
    const latencies: number[] = [];
    let sent = 0;
    const started = process.hrtime.bigint();
    const worker = async (): Promise<void> => {
      while (sent < total) {
        sent += 1;
        latencies.push(await once());
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    latencies.sort((a, b) => a - b);
    const result = {
      total,
      concurrency,
      seconds: +seconds.toFixed(2),
      checksPerSecond: Math.round(total / seconds),
      p50Ms: +percentile(latencies, 50).toFixed(2),
      p90Ms: +percentile(latencies, 90).toFixed(2),
      p99Ms: +percentile(latencies, 99).toFixed(2),
      maxMs: +latencies[latencies.length - 1]!.toFixed(2),
      // Other work on the machine skews every figure; record how busy it was.
      loadAverage1m: +loadavg()[0]!.toFixed(2),
    };
    console.log(JSON.stringify(result, null, 2));
    mkdirSync(join(repoRoot, 'bench/results'), { recursive: true });
    writeFileSync(join(repoRoot, 'bench/results/authz-check.json'), `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    client.close();
    authz.kill('SIGTERM');
    await store.purge();
    await store.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
