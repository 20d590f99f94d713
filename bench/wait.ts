/**
 * Part `wait` (issue 28): what the durable 200 costs. The same gateway path (Envoy + authz +
 * embedder, generated model, one short sentence per request) is started twice side by side:
 *   A, standalone: its own redis-server as the bench's (append-only file, fsync every second),
 *      no replica, the embedder's default SETTLEMENT_MIN_REPLICAS=0 (no WAIT);
 *   B, with WAIT: a primary with the same settings plus the redis-sentinel component's
 *      `min-replicas-to-write 1` / `min-replicas-max-lag 2` and diskless sync, a replica of it
 *      (`replicaof`, same persistence), and the embedder with SETTLEMENT_MIN_REPLICAS=1 and the
 *      production SETTLEMENT_WAIT_MS (500, deploy/kubernetes/base/embedder.env): each usage
 *      record is followed by `WAIT 1 500` on the embedder's connection.
 * Each round measures both, in the order A B, then B A (so drift in the machine's load hits both
 * alike): the whole path's CPU per request at 500 req/s offered (every process, both Redis
 * servers of B included, from /proc), then p50 and p99 at 100 req/s. bench/wait-summary.ts
 * turns the rounds into medians and per-round differences.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MIN_REPLICAS } from '../scripts/fleet/fleet.ts';
import { embeddingBody } from './embedder-service.ts';
import { atRate, cpuAtRate, type CpuAtRate, type Path } from './gateway.ts';
import { stopService, type Service } from './processes.ts';
import { startBenchRedis } from './redis-server.ts';
import { startBenchStack, type BenchStack, type StackPaths } from './stack.ts';
import { summarizeWait, type WaitSample, type WaitSummary } from './wait-summary.ts';

const run = promisify(execFile);

/** The production wait (deploy/kubernetes/base/embedder.env SETTLEMENT_WAIT_MS). */
export const PRODUCTION_WAIT_MS = 500;

/** As deploy/kubernetes/components/redis-sentinel/start.sh writes them for every Redis node (the fleet's copy). */
const PRIMARY_ARGS = [...MIN_REPLICAS];

/** Options: seconds per measured run, rounds, the two rates. */
export interface WaitOptions {
  seconds: number;
  rounds: number;
  cpuRate: number;
  latencyRate: number;
}

/** One side's measurement in one round, as measured. */
export interface WaitRun {
  side: 'standalone' | 'wait';
  round: number;
  load: number;
  cpu: CpuAtRate;
  latency: { rate: number; okPerS: number; p50Ms: number; p99Ms: number; non200: number };
}

/** The part's result: the runs and their summary. */
export interface WaitResult extends WaitSummary {
  waitMs: number;
  cpuRate: number;
  latencyRate: number;
  seconds: number;
  runs: WaitRun[];
}

/** Resolves once the replica has synced (its link up) and the primary counts it online. */
async function waitForReplica(primaryUrl: string, replicaUrl: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = async (url: string): Promise<string> => (await run('redis-cli', ['-u', url, 'INFO', 'replication'])).stdout;
    const [p, r] = await Promise.all([info(primaryUrl), info(replicaUrl)]);
    if (/master_link_status:up/.test(r) && /slave0:.*state=online/.test(p)) return;
    if (Date.now() > deadline) throw new Error(`the bench replica did not sync within ${timeoutMs} ms:\n${r}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

function gatewayPath(stack: BenchStack): Path {
  return { name: 'gateway', url: `${stack.gatewayUrl}/v1/embeddings`, headers: { authorization: `Bearer ${stack.apiKey}` } };
}

/** Runs the part; every process it starts is stopped before it returns. */
export async function measureWait(
  modelDir: string,
  modelId: string,
  paths: StackPaths,
  embedderEnv: Record<string, string>,
  opts: WaitOptions,
  loadavg: () => number,
): Promise<WaitResult> {
  const own: Service[] = [];
  const stacks: BenchStack[] = [];
  try {
    const redisA = await startBenchRedis({ name: 'redis-wait-a' });
    own.push(redisA.service);
    const primary = await startBenchRedis({ name: 'redis-wait-primary', extraArgs: PRIMARY_ARGS });
    own.push(primary.service);
    const replica = await startBenchRedis({
      name: 'redis-wait-replica',
      replicaOf: `127.0.0.1 ${new URL(primary.url).port}`,
      extraArgs: PRIMARY_ARGS,
    });
    own.push(replica.service);
    await waitForReplica(primary.url, replica.url);

    const a = await startBenchStack(
      modelDir,
      modelId,
      { ...paths, redisUrl: redisA.url, name: 'wait-a' },
      { ...embedderEnv, SETTLEMENT_MIN_REPLICAS: '0' },
    );
    stacks.push(a);
    const waitEnv = { ...embedderEnv, SETTLEMENT_MIN_REPLICAS: '1', SETTLEMENT_WAIT_MS: String(PRODUCTION_WAIT_MS) };
    const b = await startBenchStack(modelDir, modelId, { ...paths, redisUrl: primary.url, name: 'wait-b' }, waitEnv);
    stacks.push(b);
    const sides = {
      standalone: { path: gatewayPath(a), services: { ...a.services, redis: redisA.service } as Record<string, Service> },
      wait: {
        path: gatewayPath(b),
        services: { ...b.services, redis: primary.service, replica: replica.service } as Record<string, Service>,
      },
    };
    const body = embeddingBody(modelId, 'short', 1);
    // Warm-up: JIT, connection pools, gRPC channels, the replication link under load.
    for (const s of Object.values(sides)) await atRate(s.path, body, opts.cpuRate, 3);

    const runs: WaitRun[] = [];
    const pairs: { standalone: WaitSample; wait: WaitSample }[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const order: Array<'standalone' | 'wait'> = round % 2 ? ['standalone', 'wait'] : ['wait', 'standalone'];
      const pair: Partial<Record<'standalone' | 'wait', WaitSample>> = {};
      for (const side of order) {
        const { path, services } = sides[side];
        const load = loadavg();
        const cpu = await cpuAtRate(path, body, opts.cpuRate, opts.seconds, services);
        const l = await atRate(path, body, opts.latencyRate, opts.seconds);
        const latency = { rate: opts.latencyRate, okPerS: l.okPerS, p50Ms: l.p50Ms, p99Ms: l.p99Ms, non200: l.requests - l.ok };
        runs.push({ side, round, load, cpu, latency });
        pair[side] = {
          cpuMs: cpu.totalMs,
          primaryMs: cpu.perService.redis ?? 0,
          replicaMs: cpu.perService.replica ?? 0,
          p50Ms: l.p50Ms,
          p99Ms: l.p99Ms,
        };
        process.stderr.write(
          `bench: wait round ${round} ${side}: ${cpu.totalMs.toFixed(3)} ms CPU/request at ${opts.cpuRate}/s (redis ${(cpu.perService.redis ?? 0).toFixed(3)}, replica ${(cpu.perService.replica ?? 0).toFixed(3)}), p50 ${l.p50Ms.toFixed(2)} p99 ${l.p99Ms.toFixed(2)} ms at ${opts.latencyRate}/s, load ${load.toFixed(2)}\n`,
        );
      }
      pairs.push(pair as { standalone: WaitSample; wait: WaitSample });
    }
    return {
      ...summarizeWait(pairs),
      waitMs: PRODUCTION_WAIT_MS,
      cpuRate: opts.cpuRate,
      latencyRate: opts.latencyRate,
      seconds: opts.seconds,
      runs,
    };
  } finally {
    for (const s of stacks.reverse()) await s.stop();
    for (const s of own.reverse()) await stopService(s);
  }
}
