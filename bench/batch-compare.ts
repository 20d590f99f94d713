/**
 * Online p99 while a batch runs, for two embedder trees alternated in one run (issue 27's
 * priority goal is a ratio of two tails, and one run's spread is as wide as the changes being
 * tried, so a change is judged only against the tree before it, in the same minutes):
 *   npx tsx bench/batch-compare.ts --rounds 4 --seconds 90 --envoy "$(bash scripts/install-envoy.sh)" \
 *     A="$(bash bench/variant.sh baseline --copy-only)" B="$(bash bench/variant.sh NAME --copy-only)"
 * Each round starts one bench stack per tree (order A B, then B A, …; the default model, the
 * background session) and runs bench/batch.ts' `interleaved` on it: one open loop of
 * one-sentence requests across alternating idle windows and batches. Prints each round's p99
 * alone, during a batch and their ratio, and where the time went (p50 / p99 of the edge: client,
 * Envoy, authz; of the embedder outside the model; of the model), then per tree the median ratio
 * and the pooled one.
 * `bench/variant.sh NAME --copy-only` makes a tree's copy (bench/tuning/NAME.patch applied) and prints its entry.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readManifest } from '../contract/model-manifest.ts';
import { client, interleaved } from './batch.ts';
import { useEmbedderEntry } from './embedder-service.ts';
import { quantile, tailMean } from './hey.ts';
import { stopService } from './processes.ts';
import { startBenchRedis } from './redis-server.ts';
import { startBenchStack, type StackPaths } from './stack.ts';

/** "mean → mean ms (ratio)" of the slowest 5 % of two sorted samples. */
function tailRatio(alone: readonly number[], during: readonly number[]): string {
  const [a, d] = [tailMean(alone), tailMean(during)];
  return `${a.toFixed(1)} → ${d.toFixed(1)} ms (${(d / a).toFixed(2)})`;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '90' },
    'model-dir': { type: 'string', default: '.local/models/default' },
    // Sizes each batch to about one 4 s window at the lane's pace with no online traffic.
    'lane-rate': { type: 'string', default: '300' },
    envoy: { type: 'string' },
    tls: { type: 'string', default: '.local/bench/tls' },
  },
});
const trees = positionals.map((p) => {
  const at = p.indexOf('=');
  if (at < 1) throw new Error(`tree "${p}": expected NAME=path/to/embedder/src/main.ts`);
  return { name: p.slice(0, at), entry: p.slice(at + 1) };
});
if (trees.length !== 2) throw new Error('two trees: A=entry B=entry');
if (!values.envoy) throw new Error('--envoy PATH (bash scripts/install-envoy.sh prints it)');

const modelDir = resolve(values['model-dir']!);
const modelId = readManifest(modelDir).id;
const redis = await startBenchRedis();
const paths: StackPaths = { envoyBin: values.envoy, tlsDir: values.tls!, redisUrl: redis.url };
const ca = readFileSync(`${paths.tlsDir}/ca.pem`);
const ratios: Record<string, number[]> = {};
const pooled: Record<string, { alone: number[]; during: number[] }> = {};

try {
  for (let round = 0; round < Number(values.rounds); round++) {
    const order = round % 2 === 0 ? trees : [...trees].reverse();
    for (const tree of order) {
      useEmbedderEntry(tree.entry);
      const storeDir = resolve(`.local/bench/batch-${randomBytes(4).toString('hex')}`);
      const stack = await startBenchStack(modelDir, modelId, paths, {
        BATCH_KEK: randomBytes(32).toString('hex'),
        BATCH_STORE: `dir:${storeDir}`,
        BATCH_POLL_MS: '50',
        BATCH_SESSION: 'background',
      });
      try {
        const load = loadavg()[0]!;
        const online = await interleaved(
          stack,
          ca,
          client(stack, ca, stack.apiKey),
          modelId,
          Number(values['lane-rate']),
          Number(values.seconds),
        );
        const [alone, during] = [quantile(online.alone, 0.99), quantile(online.during, 0.99)];
        ratios[tree.name] = [...(ratios[tree.name] ?? []), during / alone];
        const pool = pooled[tree.name] ?? { alone: [], during: [] };
        pooled[tree.name] = pool;
        pool.alone.push(...online.alone);
        pool.during.push(...online.during);
        console.log(
          `round ${round + 1} ${tree.name}: p99 alone ${alone.toFixed(1)} ms, during a batch ${during.toFixed(1)} ms, ` +
            `ratio ${(during / alone).toFixed(2)}; slowest 5 % ${tailRatio(online.alone, online.during)} (${online.alone.length} / ${online.during.length} requests, ${online.cycles} batches, load ${load.toFixed(1)})`,
        );
        console.log(`  p50 / p99 ms alone: ${online.parts.alone}; during a batch: ${online.parts.during}`);
      } finally {
        await stack.stop();
        rmSync(storeDir, { recursive: true, force: true });
      }
    }
  }
  for (const { name } of trees) {
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const { alone, during } = pooled[name]!;
    const p = (xs: number[]) => quantile(sorted(xs), 0.99);
    console.log(
      `${name}: ratio by round ${ratios[name]!.map((r) => r.toFixed(2)).join(', ')}; median ${quantile(sorted(ratios[name]!), 0.5).toFixed(2)}; ` +
        `pooled p99 ${p(alone).toFixed(1)} → ${p(during).toFixed(1)} ms (${(p(during) / p(alone)).toFixed(2)}); ` +
        `pooled slowest 5 % ${tailRatio(sorted(alone), sorted(during))}`,
    );
  }
} finally {
  await stopService(redis.service);
}
