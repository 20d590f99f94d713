/**
 * Where the gateway's CPU goes: starts the bench stack (Envoy, authz, the embedder on the test
 * model, its own Redis), offers one-sentence requests at a fixed rate, and profiles the main
 * thread of authz and of the embedder over the measured window only (bench/profile-hook.cjs,
 * switched on and off by SIGUSR2). Prints per service its CPU per request (/proc, every thread),
 * how busy its main thread was, and its busiest files and functions; the profiles stay in
 * .local/bench/profiles/<service>.cpuprofile (Chrome DevTools and speedscope open them).
 *   npx tsx bench/profile.ts [--rate 250] [--seconds 10] [--top 15] [--strings 1] [--format float|base64] [--warm-up 30]
 * (`--strings 32` sends 32 sentences a request, `--format base64` asks for base64 vectors).
 * The profiler adds its own cost, so read shares, not the CPU per request, from a profiled run.
 */
import { existsSync, mkdirSync, renameSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { summarizeProfile, type CpuProfile } from './cpu-profile.ts';
import { embeddingBody } from './embedder-service.ts';
import { atRate, CPU_WARM_UP_S, type Path } from './gateway.ts';
import { readManifest } from './model-inputs.ts';
import { cpuMs, stopAll } from './processes.ts';
import { startBenchRedis } from './redis-server.ts';
import { startBenchStack } from './stack.ts';

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    rate: { type: 'string', default: '250' },
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '15' },
    strings: { type: 'string', default: '1' },
    format: { type: 'string', default: 'float' },
    'warm-up': { type: 'string', default: String(CPU_WARM_UP_S) },
    envoy: { type: 'string', default: '.venv/bin/envoy' },
    tls: { type: 'string', default: '.local/bench/tls' },
  },
});

const dir = resolve('.local/bench/profiles');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
// The services inherit the bench's environment (bench/stack.ts): the hook rides on it.
process.env.CTG_PROFILE_DIR = dir;
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --require ${resolve('bench/profile-hook.cjs')}`.trim();

const modelDir = '.local/models/test';
const modelId = readManifest(modelDir).id;
const redis = await startBenchRedis();
const stack = await startBenchStack(modelDir, modelId, { envoyBin: values.envoy!, tlsDir: values.tls!, redisUrl: redis.url });
try {
  const path: Path = { name: 'gateway', url: `${stack.gatewayUrl}/v1/embeddings`, headers: { authorization: `Bearer ${stack.apiKey}` } };
  const body = embeddingBody(modelId, 'short', Number(values.strings), values.format === 'float' ? {} : { encoding_format: values.format });
  const rate = Number(values.rate);
  await atRate(path, body, rate, Number(values['warm-up'])); // warm-up: JIT (CPU_WARM_UP_S), connection pools, the gRPC channel
  const services = { ...stack.services, redis: redis.service };
  const profiled = { authz: stack.services.authz, embedder: stack.services.embedder };
  const before = Object.fromEntries(Object.entries(services).map(([name, s]) => [name, cpuMs(s.pid)]));
  for (const s of Object.values(profiled)) process.kill(s.pid, 'SIGUSR2');
  const result = await atRate(path, body, rate, Number(values.seconds));
  for (const s of Object.values(profiled)) process.kill(s.pid, 'SIGUSR2');
  const spent = Object.fromEntries(Object.entries(services).map(([name, s]) => [name, (cpuMs(s.pid) - before[name]!) / result.ok]));
  console.log(
    `${result.ok} requests at ${rate}/s offered (${result.okPerS.toFixed(0)}/s served, p99 ${result.p99Ms.toFixed(1)} ms), load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(
    `CPU per request, ms: ${Object.entries(spent)
      .map(([n, ms]) => `${n} ${ms.toFixed(3)}`)
      .join(', ')}`,
  );
  const pct = (x: number) => `${(100 * x).toFixed(1).padStart(5)} %`;
  for (const [name, s] of Object.entries(profiled)) {
    const file = `${dir}/${s.pid}.cpuprofile`;
    for (let i = 0; i < 50 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 100));
    const target = `${dir}/${name}.cpuprofile`;
    renameSync(file, target);
    const summary = summarizeProfile(JSON.parse(readFileSync(target, 'utf8')) as CpuProfile, Number(values.top), `${process.cwd()}/`);
    console.log(`\n${name}: main thread busy ${pct(summary.busyUs / summary.totalUs)} of the window (${target})`);
    console.log('  by file:');
    for (const f of summary.byFile) console.log(`  ${pct(f.share)}  ${f.name}`);
    console.log('  by function:');
    for (const f of summary.byFunction) console.log(`  ${pct(f.share)}  ${f.name}`);
  }
} finally {
  await stack.stop();
  await stopAll();
}
