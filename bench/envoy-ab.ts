/**
 * Two Envoys in front of one authz and one embedder: A as the bench stack renders and starts it,
 * B the same config with other ports and a variant (its worker count, parts of its filter chain
 * stripped). Windows at one rate alternate between them (A B, B A, …), and each window's CPU per
 * request is read for the Envoy that served it and for the shared services. Only Envoy differs,
 * so the comparison is much steadier than two whole stacks in turn (compare-trees.sh): the same
 * config twice read 0.96–1.01 for Envoy over three rounds (2026-11-27, sixth round).
 *
 * `--b-floor embedder` (or `authz,embedder`) sends B's requests to the frameworks' floor instead
 * (bench/floor-services.ts): Fastify answering a fixed real response, grpc-js answering a fixed
 * allowed Check, no Redis. B then reads what Envoy and the frameworks cost with none of the
 * gateway's own work, and A minus B is all that the gateway's code could ever save.
 *   npx tsx bench/envoy-ab.ts [--rate 250] [--seconds 8] [--rounds 4] [--warm-up 10]
 *     [--a-workers N] [--b-workers N] [--b-strip lua,access-log] [--b-floor authz,embedder]
 * Workers default to the stack's (scripts/stack/components.ts, localEnvoyWorkers). Prints a line
 * per window (Envoy, authz, embedder, Redis, whole path in ms of CPU per request, served/s, p99
 * ms), the medians, and B ÷ A per round; the last line is the same as JSON.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { envoyComponent } from '../scripts/stack/components.ts';
import { httpOk, httpsOk, tcpOpen, waitFor } from '../scripts/stack/probes.ts';
import { embeddingBody, inherited } from './embedder-service.ts';
import { stripEnvoyConfig } from './envoy-strip.ts';
import { atRate, type Path } from './gateway.ts';
import { readManifest } from './model-inputs.ts';
import { cpuMs, freePort, startService, stopAll, type Service } from './processes.ts';
import { startBenchRedis } from './redis-server.ts';
import { startBenchStack } from './stack.ts';
import { median } from './wait-summary.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    rate: { type: 'string', default: '250' },
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '4' },
    'warm-up': { type: 'string', default: '10' },
    'a-workers': { type: 'string' },
    'b-workers': { type: 'string' },
    'b-strip': { type: 'string', default: '' },
    'b-floor': { type: 'string', default: '' },
    envoy: { type: 'string', default: '.venv/bin/envoy' },
    tls: { type: 'string', default: '.local/bench/tls' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const workers = (raw: string | undefined) => (raw === undefined ? undefined : Number(raw));

/** One window: CPU ms per request served, and what was served. */
interface Window {
  envoy: number;
  authz: number;
  embedder: number;
  redis: number;
  total: number;
  okPerS: number;
  p99Ms: number;
}

const modelDir = '.local/models/test';
const modelId = readManifest(modelDir).id;
let stopStack = async (): Promise<void> => undefined;
try {
  const redis = await startBenchRedis();
  const aWorkers = workers(values['a-workers']);
  const stack = await startBenchStack(modelDir, modelId, {
    envoyBin: values.envoy as string,
    tlsDir: values.tls as string,
    redisUrl: redis.url,
    ...(aWorkers ? { envoyConcurrency: aWorkers } : {}),
  });
  stopStack = stack.stop;
  // B: A's rendered config on two other ports (the caller token's SDS file is shared, read-only).
  const aConfig = readFileSync(stack.envoy.configFile, 'utf8');
  const aPort = Number(new URL(stack.gatewayUrl).port);
  const aAdmin = stack.envoy.adminPort;
  const [bPort, bAdmin] = [await freePort(), await freePort()];
  const floor = (values['b-floor'] as string).split(',').filter(Boolean);
  if (floor.some((f) => f !== 'authz' && f !== 'embedder')) throw new Error('--b-floor takes authz and/or embedder');
  // A floor authz allows what the real embedder would refuse (no grant record): both, or the embedder alone.
  if (floor.includes('authz') && !floor.includes('embedder')) throw new Error('--b-floor authz needs embedder too');
  const body = embeddingBody(modelId, 'short', 1);
  const floors: { authz?: Service; embedder?: Service } = {};
  let bConfig = aConfig
    .replaceAll(`port_value: ${aPort}`, `port_value: ${bPort}`)
    .replaceAll(`port_value: ${aAdmin}`, `port_value: ${bAdmin}`);
  if (floor.includes('embedder')) {
    // One real response, straight from the embedder with a fresh grant: the floor answers it to every request.
    const real = await fetch(`${stack.embedderUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await stack.freshGrant()) },
      body,
    });
    if (real.status !== 200) throw new Error(`the embedder answered ${real.status} to the floor's sample request`);
    writeFileSync('.local/bench/floor-body.json', Buffer.from(await real.arrayBuffer()));
    const port = await freePort();
    floors.embedder = await startFloor('embedder', port, ['.local/bench/floor-body.json'], httpOk(`http://127.0.0.1:${port}/ready`));
    bConfig = bConfig.replaceAll(`port_value: ${new URL(stack.embedderUrl).port}`, `port_value: ${port}`);
  }
  if (floor.includes('authz')) {
    const port = await freePort();
    floors.authz = await startFloor('authz', port, [], tcpOpen('127.0.0.1', port));
    bConfig = bConfig.replaceAll(`port_value: ${stack.authzAddress.split(':')[1]}`, `port_value: ${port}`);
  }
  const bFile = '.local/bench/envoy-b.yaml';
  writeFileSync(bFile, bConfig);
  const strip = (values['b-strip'] as string).split(',').filter(Boolean);
  if (strip.length) stripEnvoyConfig(bFile, strip);
  const bWorkers = workers(values['b-workers']);
  const envoyB = await startService(
    envoyComponent({
      name: 'envoy-b',
      binary: values.envoy as string,
      configFile: bFile,
      adminPort: bAdmin,
      gatewayHost: '127.0.0.1',
      gatewayPort: bPort,
      logFile: '.local/bench/logs/envoy-b.log',
      ...(bWorkers ? { concurrency: bWorkers } : {}),
    }),
  );
  await waitFor('the second Envoy /health', httpsOk(`https://127.0.0.1:${bPort}/health`, readFileSync(`${values.tls}/ca.pem`)), 30_000);

  const headers = { authorization: `Bearer ${stack.apiKey}` };
  const paths: Record<'A' | 'B', Path> = {
    A: { name: 'A', url: `${stack.gatewayUrl}/v1/embeddings`, headers },
    B: { name: 'B', url: `https://127.0.0.1:${bPort}/v1/embeddings`, headers },
  };
  const real = { authz: stack.services.authz.pid, embedder: stack.services.embedder.pid, redis: redis.service.pid };
  const processes = {
    A: { envoy: stack.services.envoy.pid, ...real },
    B: { ...real, envoy: envoyB.pid, authz: floors.authz?.pid ?? real.authz, embedder: floors.embedder?.pid ?? real.embedder },
  };
  for (const which of ['A', 'B'] as const) await atRate(paths[which], body, rate, Number(values['warm-up']));

  const windows: Record<'A' | 'B', Window[]> = { A: [], B: [] };
  for (let round = 0; round < rounds; round++) {
    for (const which of round % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
      const pids = processes[which];
      const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
      const served = await atRate(paths[which], body, rate, seconds);
      const per = (name: keyof typeof pids) => (cpuMs(pids[name]) - (before[name] as number)) / served.ok;
      const w = {
        envoy: per('envoy'),
        authz: per('authz'),
        embedder: per('embedder'),
        redis: per('redis'),
        total: 0,
        okPerS: served.okPerS,
        p99Ms: served.p99Ms,
      };
      w.total = w.envoy + w.authz + w.embedder + w.redis;
      windows[which].push(w);
      const shown = [w.envoy, w.authz, w.embedder, w.redis, w.total].map((x) => x.toFixed(3)).join(' ');
      console.log(
        `${which} round ${round + 1}: ${shown}  ${w.okPerS.toFixed(0)}/s p99 ${w.p99Ms.toFixed(1)} ms  load ${loadavg()[0]?.toFixed(2)}`,
      );
    }
  }
  const medians = (which: 'A' | 'B') =>
    Object.fromEntries(
      (['envoy', 'authz', 'embedder', 'redis', 'total'] as const).map((k) => [
        k,
        Number(median(windows[which].map((w) => w[k])).toFixed(3)),
      ]),
    );
  const ratios = (k: 'envoy' | 'total') => windows.B.map((b, i) => Number((b[k] / (windows.A[i] as Window)[k]).toFixed(3)));
  const result = {
    rate,
    seconds,
    rounds,
    bStrip: strip,
    bFloor: floor,
    aWorkers: aWorkers ?? 'default',
    bWorkers: bWorkers ?? 'default',
    A: medians('A'),
    B: medians('B'),
    envoyBOverA: ratios('envoy'),
    totalBOverA: ratios('total'),
  };
  console.log(`medians (envoy, authz, embedder, redis, total): A ${JSON.stringify(result.A)}  B ${JSON.stringify(result.B)}`);
  console.log(`B ÷ A by round: Envoy ${result.envoyBOverA.join(' ')}; whole path ${result.totalBOverA.join(' ')}`);
  console.log(JSON.stringify(result));
} finally {
  await stopStack();
  await stopAll();
}
process.exit(0);

/** Starts one of bench/floor-services.ts's servers as a bench service. */
function startFloor(role: 'authz' | 'embedder', port: number, args: string[], ready: () => Promise<boolean>): Promise<Service> {
  return startService({
    name: `floor-${role}`,
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/floor-services.ts', role, String(port), ...args],
    env: inherited(),
    logFile: `.local/bench/logs/floor-${role}.log`,
    ready,
    readyTimeoutMs: 30_000,
    stopGraceMs: 2_000,
  });
}
