/**
 * The gateway of an older commit, measured by this tree's procedure in the same run: started by
 * that tree's own bench/stack.ts (its authz, embedder, Envoy config and Redis scripts), then
 * measured with this tree's maxRate and cpuAtRate. Runs with the older tree as its working
 * directory (bench/run.sh unpacks f5cf755, the commit before token admission, into
 * .local/bench/baseline); prints one JSON line.
 *   node --import tsx <this file> --envoy BIN --tls DIR --redis-url URL --redis-pid PID
 *     [--model-dir DIR] [--seconds N] [--step-seconds N] [--rates 1000,1500 | --rates none] [--cpu-rate 500] [--warm-up 30]
 * `--cpu-rate` moves the CPU-per-request measurement to a rate this machine serves without
 * saturating (per-request CPU grows once requests queue); `--rates none` skips the ladder.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { embeddingBody } from './embedder-service.ts';
import { CPU_WARM_UP_S, cpuAtRate, maxRate, type GatewayResult, type Path } from './gateway.ts';
import { readManifest } from './model-inputs.ts';
import type { Service } from './processes.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    envoy: { type: 'string' },
    tls: { type: 'string' },
    'redis-url': { type: 'string' },
    'redis-pid': { type: 'string', default: '0' },
    'model-dir': { type: 'string', default: '.local/models/test' },
    seconds: { type: 'string', default: '10' },
    'step-seconds': { type: 'string', default: '5' },
    rates: { type: 'string', default: '1000,1500,2000' },
    'cpu-rate': { type: 'string', default: '500' },
    'warm-up': { type: 'string', default: String(CPU_WARM_UP_S) },
  },
});

/** The older tree's stack module: only what this script uses of it, which every round's stack.ts has. */
interface OldStackModule {
  startBenchStack(
    modelDir: string,
    modelId: string,
    paths: { envoyBin: string; tlsDir: string; redisUrl: string },
  ): Promise<{
    gatewayUrl: string;
    apiKey: string;
    services: Record<string, { pid: number }>;
    stop: () => Promise<void>;
  }>;
}
interface OldProcessesModule {
  stopAll(): Promise<void>;
}

async function main(): Promise<void> {
  const old = (await import(pathToFileURL(resolve('bench/stack.ts')).href)) as OldStackModule;
  const modelDir = values['model-dir'] as string;
  const modelId = readManifest(modelDir).id;
  const stack = await old.startBenchStack(modelDir, modelId, {
    envoyBin: values.envoy as string,
    tlsDir: values.tls as string,
    redisUrl: values['redis-url'] as string,
  });
  try {
    const gateway: Path = {
      name: 'baseline',
      url: `${stack.gatewayUrl}/v1/embeddings`,
      headers: { authorization: `Bearer ${stack.apiKey}` },
    };
    const body = embeddingBody(modelId, 'short', 1);
    const pid = Number(values['redis-pid']);
    const services = { ...stack.services, ...(pid > 0 ? { redis: { pid } } : {}) } as unknown as Record<string, Service>;
    const seconds = Number(values.seconds);
    const stepSeconds = Number(values['step-seconds']);
    const rates = values.rates === 'none' ? [] : (values.rates as string).split(',').map(Number);
    const cpuRate = Number(values['cpu-rate']);
    const steps: GatewayResult['steps'] = [];
    await cpuAtRate(gateway, body, cpuRate, Number(values['warm-up']), services); // warm-up: JIT (CPU_WARM_UP_S), connection pools, gRPC channel
    const cpu = await cpuAtRate(gateway, body, cpuRate, seconds, services); // at CPU_RATE (default 500)
    const maxRps = await maxRate(gateway, body, { seconds, stepSeconds, rates }, steps);
    process.stdout.write(`${JSON.stringify({ maxRps, cpu, steps })}\n`);
  } finally {
    await stack.stop();
    await ((await import(pathToFileURL(resolve('bench/processes.ts')).href)) as OldProcessesModule).stopAll();
  }
}

// Exits when done: this tree's stack issues grants through test/support/settlement.ts, whose
// Redis client stays open for the process's life, so the process would otherwise never end and
// compare-trees.sh would wait on it for ever.
main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`baseline failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
