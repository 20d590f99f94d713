/**
 * `make bench` entry (called by bench/run.sh): runs the chosen parts in order, prints the table
 * and writes bench/results/latest.json. Every process it starts is stopped before it exits.
 *   npx tsx bench/main.ts [--parts efficiency,gateway,authz] [--quick] [--models DIR,DIR]
 *     [--gateway-model DIR] [--envoy PATH] [--tls DIR] [--redis-url URL] [--embedder-entry FILE]
 *     [--embedder-env K=V,K=V] [--envoy-concurrency N] [--authz-entry FILE] [--label NAME]
 *     [--http-only] [--cases short×1,note×32,note×8@1] [--case-seconds N] [--baseline-spin 0|1] [--baseline-tree DIR]
 * --embedder-entry runs a patched copy (bench/variant.sh); --label names a tuning run, whose
 * results go to bench/results/<label>.json instead of latest.json. --redis-url own (the
 * default) starts the bench's own redis-server, whose CPU then counts in the whole path's.
 * --baseline-tree DIR measures that older tree's gateway too (bench/baseline.ts).
 * --envoy-strip access-log,lua,header-mutation: a tuning run without those Envoy filters.
 * Part `batch` (bench/batch.ts): the Batch API's goals on the default model.
 * Part `cost` (not in the default parts): the two per-request costs only, three rounds each, for
 * comparing variants one after another.
 * Part `wait` (not in the default parts, bench/wait.ts): the gateway path with and without a Redis
 * replica and SETTLEMENT_MIN_REPLICAS=1 (the `WAIT` after each usage record), alternated; it
 * starts its own three redis-servers whatever --redis-url says.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { measureAuthz } from './authz.ts';
import { measureBatch } from './batch.ts';
import { runScriptJson } from './child-json.ts';
import { CASE_WARM_UP_S, measureModel, type ModelEfficiency } from './efficiency.ts';
import { useEmbedderEntry } from './embedder-service.ts';
import { CPU_WARM_UP_S, measureGateway, measurePathCost } from './gateway.ts';
import { measureWait } from './wait.ts';
import { readManifest } from './model-inputs.ts';
import { stopAll, type Service } from './processes.ts';
import { startBenchRedis } from './redis-server.ts';
import { table, writeLatest, type BaselineResult, type RunResults } from './report.ts';
import { startBenchStack, type StackPaths } from './stack.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    parts: { type: 'string', default: 'efficiency,gateway,authz' },
    quick: { type: 'boolean', default: false },
    models: { type: 'string', default: '.local/models/default,.local/models/test' },
    'gateway-model': { type: 'string', default: '.local/models/test' },
    envoy: { type: 'string', default: '.venv/bin/envoy' },
    tls: { type: 'string', default: '.local/bench/tls' },
    'redis-url': { type: 'string', default: 'own' },
    'baseline-tree': { type: 'string', default: '' },
    'envoy-strip': { type: 'string', default: '' },
    'embedder-entry': { type: 'string', default: 'embedder/src/main.ts' },
    'embedder-env': { type: 'string', default: '' },
    label: { type: 'string', default: '' },
    'envoy-concurrency': { type: 'string', default: '0' },
    'authz-entry': { type: 'string', default: 'authz/src/main.ts' },
    'http-only': { type: 'boolean', default: false },
    cases: { type: 'string', default: '' },
    // Seconds of each HTTP case (efficiency): more for a slow model, where 8 s hold two requests.
    'case-seconds': { type: 'string', default: '' },
    command: { type: 'string', default: '' },
    'baseline-spin': { type: 'string', default: '0' },
  },
});
const parts = new Set((values.parts as string).split(','));
const quick = values.quick as boolean;
const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
const embedderEnv = Object.fromEntries(
  (values['embedder-env'] as string)
    .split(',')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
useEmbedderEntry(values['embedder-entry'] as string);

const DEFAULT_MODEL_DIR = '.local/models/default';

/** The bench's own redis-server, when --redis-url is `own`. */
let ownRedis: Service | undefined;
let redisUrl = values['redis-url'] as string;

/** Where the bench finds Envoy, the TLS files, Redis and the authz to run. */
function stackPaths(): StackPaths {
  return {
    envoyBin: values.envoy as string,
    tlsDir: values.tls as string,
    redisUrl,
    envoyConcurrency: Number(values['envoy-concurrency']),
    authzEntry: values['authz-entry'] as string,
    envoyStrip: (values['envoy-strip'] as string).split(',').filter(Boolean),
  };
}

async function efficiency(): Promise<ModelEfficiency[]> {
  const results: ModelEfficiency[] = [];
  for (const dir of (values.models as string).split(',')) {
    if (!existsSync(`${dir}/model.onnx`)) throw new Error(`${dir}/model.onnx is missing (bench/run.sh installs the models)`);
    log(`efficiency: ${dir}`);
    const cases = (values.cases as string).split(',').filter(Boolean);
    results.push(
      await measureModel(dir, {
        seconds: Number(values['case-seconds']) || (quick ? 3 : 8),
        warmUpSeconds: quick ? 1 : CASE_WARM_UP_S,
        baselineSeconds: quick ? 1 : 3,
        embedderEnv,
        httpOnly: values['http-only'] as boolean,
        ...(cases.length ? { cases } : {}),
        baselineSpin: values['baseline-spin'] !== '0',
        paths: stackPaths(),
      }),
    );
  }
  return results;
}

/** The older tree's gateway, by its own stack module and this tree's procedure, in a child process. */
async function baseline(tree: string, gatewayModelDir: string): Promise<BaselineResult> {
  const script = resolve('bench/baseline.ts');
  const args = [
    '--envoy',
    resolve(values.envoy as string),
    '--tls',
    resolve(values.tls as string),
    '--redis-url',
    redisUrl,
    '--redis-pid',
    String(ownRedis?.pid ?? 0),
    '--model-dir',
    gatewayModelDir,
    '--seconds',
    quick ? '4' : '10',
    '--step-seconds',
    quick ? '3' : '5',
    '--rates',
    quick ? '1000' : '1000,1500,2000,2500',
    '--warm-up',
    String(quick ? 3 : CPU_WARM_UP_S),
  ];
  const loadAtStart = loadavg()[0] ?? 0;
  const r = await runScriptJson<Omit<BaselineResult, 'tree' | 'loadAtStart'>>(script, args, 600_000, tree);
  return { tree, loadAtStart, ...r };
}

async function main(): Promise<void> {
  const results: RunResults = { loadAtStart: loadavg()[0] ?? 0 };
  // Part `wait` alone starts its own servers (bench/wait.ts).
  if (redisUrl === 'own' && [...parts].some((p) => p !== 'wait')) {
    const redis = await startBenchRedis();
    ownRedis = redis.service;
    redisUrl = redis.url;
  }
  if (parts.has('efficiency')) {
    results.efficiency = await efficiency();
    // The goal's ratio is the default model's: on the generated test model HTTP, not inference, dominates.
    if (existsSync(`${DEFAULT_MODEL_DIR}/model.onnx`)) results.defaultModel = readManifest(DEFAULT_MODEL_DIR).id;
  }
  if (parts.has('gateway') || parts.has('authz') || parts.has('cost')) {
    const dir = values['gateway-model'] as string;
    const modelId = readManifest(dir).id;
    log(`starting the bench stack (Envoy + authz + embedder with ${modelId})`);
    const stack = await startBenchStack(dir, modelId, stackPaths(), embedderEnv);
    results.gatewayModel = modelId;
    try {
      if (parts.has('gateway')) {
        log('gateway overhead');
        results.loadAtGateway = loadavg()[0] ?? 0;
        results.gateway = await measureGateway(
          stack,
          {
            seconds: quick ? 4 : 10,
            stepSeconds: quick ? 3 : 5,
            rates: quick ? [1000, 2000] : [1000, 1500, 2000, 2500, 3000, 4000, 5000],
            warmUpS: quick ? 3 : CPU_WARM_UP_S,
          },
          ownRedis,
        );
      }
      if (parts.has('cost')) {
        log('path cost (CPU at 500 req/s, added p50 at 100 req/s)');
        results.loadAtGateway = loadavg()[0] ?? 0;
        results.pathCost = await measurePathCost(stack, quick ? 4 : 10, quick ? 1 : 3, quick ? 3 : CPU_WARM_UP_S, ownRedis);
      }
      if (parts.has('authz')) {
        log('authz capacity');
        // A patched authz is measured in the stack; bench/authz-check.ts always runs authz/src.
        const own = values['authz-entry'] !== 'authz/src/main.ts';
        results.authz = await measureAuthz(stack, quick ? 3 : 8, 64, own);
      }
    } finally {
      await stack.stop();
    }
    const tree = values['baseline-tree'] as string;
    if (parts.has('gateway') && tree) {
      log(`gateway of the older tree in ${tree}`);
      results.baseline = await baseline(tree, dir);
    }
  }
  if (parts.has('wait')) {
    const dir = values['gateway-model'] as string;
    const modelId = readManifest(dir).id;
    log('wait: the path with a replica and WAIT 1 against a standalone Redis, alternated');
    results.loadAtWait = loadavg()[0] ?? 0;
    results.gatewayModel = modelId;
    results.wait = await measureWait(
      dir,
      modelId,
      stackPaths(),
      embedderEnv,
      { seconds: quick ? 3 : 10, rounds: quick ? 2 : 4, cpuRate: 500, latencyRate: 100 },
      () => loadavg()[0] ?? 0,
    );
  }
  if (parts.has('batch')) {
    log('batch: throughput vs raw ONNX Runtime, online p99 during a batch, fairness between batches (default model)');
    results.batch = await measureBatch(DEFAULT_MODEL_DIR, readManifest(DEFAULT_MODEL_DIR).id, stackPaths(), quick);
    process.stderr.write(`bench: batch ${JSON.stringify(results.batch)}\n`);
  }
  const command = (values.command as string) || `npx tsx bench/main.ts ${process.argv.slice(2).join(' ')}`.trim();
  const merged = writeLatest(results, command, (values.label as string) || 'latest');
  process.stdout.write(`${table(results, merged)}\n`);
}

main()
  .catch((err: Error) => {
    process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
    process.exitCode = 1;
  })
  .finally(() => stopAll())
  // Exits when done: the stack issues grants through test/support/settlement.ts, whose Redis
  // client stays open for the process's life, so the process would otherwise never end.
  .finally(() => process.exit());
