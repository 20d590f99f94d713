/**
 * `make up` / `make down` (called by up.sh and down.sh after the installs): `up` starts the
 * stack's supervisor (daemon.ts) in the background unless it already runs, waits until the
 * gateway is ready and says how to use it; `down` drains and stops exactly what `up` started.
 */
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { settingDefault } from '../../contract/settings.js';
import { repoRoot } from './components.js';
import { upSettings, type UpSettings } from './settings.js';

const DAEMON = 'scripts/stack/daemon.ts';
const say = (line: string) => process.stderr.write(`stack: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pid in `file` while that process is alive and still runs `marker` (a recycled pid is not ours). */
function runningPid(file: string, marker: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const args = execFileSync('ps', ['-ww', '-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
    return args.includes(marker) ? pid : undefined;
  } catch {
    return undefined;
  }
}

const state = (s: UpSettings) =>
  existsSync(join(s.stateDir, 'stack.state')) ? readFileSync(join(s.stateDir, 'stack.state'), 'utf8').trim() : '';
const daemonPid = (s: UpSettings) => runningPid(join(s.stateDir, 'stack.pid'), DAEMON);

async function up(s: UpSettings): Promise<number> {
  if (daemonPid(s) !== undefined && state(s).startsWith('failed')) {
    say(`the running stack has a failed component (${state(s)}); restarting it`);
    await down(s);
  }
  if (daemonPid(s) === undefined) {
    // Components a killed supervisor (or an older make up) left running would hold the ports.
    await stopOrphans(s);
    startDaemon(s);
  }
  for (const deadline = Date.now() + 420_000; Date.now() < deadline; await sleep(250)) {
    const now = state(s);
    if (now === 'ready') {
      printWelcome(s);
      return 0;
    }
    if (now.startsWith('failed') || daemonPid(s) === undefined) {
      say(`${now || 'the stack supervisor exited'}\n  logs: ${s.logDir}/ (stack.log says what happened)`);
      return 1;
    }
  }
  say(`timed out waiting for the stack; logs in ${s.logDir}/`);
  return 1;
}

function startDaemon(s: UpSettings): void {
  mkdirSync(s.logDir, { recursive: true });
  rmSync(join(s.stateDir, 'stack.state'), { force: true });
  const log = openSync(join(s.logDir, 'stack.log'), 'a');
  // Its own session: the stack outlives this command and the terminal.
  const child = spawn(process.execPath, ['--import', 'tsx', DAEMON], {
    cwd: repoRoot,
    env: process.env,
    detached: true,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  child.unref();
  writeFileSync(join(s.stateDir, 'stack.pid'), `${child.pid}\n`);
  say(`started the stack supervisor (pid ${child.pid}), logs in ${s.logDir}/`);
}

async function down(s: UpSettings): Promise<number> {
  const pid = daemonPid(s);
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 600 && daemonPid(s) !== undefined; i++) await sleep(100);
    if (daemonPid(s) !== undefined) {
      say('the stack supervisor did not stop in 60 s; killing it');
      process.kill(pid, 'SIGKILL');
    }
    say(`stopped the stack (supervisor pid ${pid})`);
  }
  await stopOrphans(s);
  rmSync(join(s.stateDir, 'stack.pid'), { force: true });
  rmSync(join(s.stateDir, 'stack.state'), { force: true });
  return 0;
}

/** Stops components whose supervisor is gone, by pid file with the command line checked. */
async function stopOrphans(s: UpSettings): Promise<void> {
  const markers: Record<string, string> = {
    envoy: s.envoyConfigFile,
    embedder: 'embedder/src/main.ts',
    authz: 'authz/src/main.ts',
    redis: 'redis-server',
  };
  const stopping: number[] = [];
  for (const [name, marker] of Object.entries(markers)) {
    const orphan = runningPid(join(s.stateDir, `${name}.pid`), marker);
    if (orphan !== undefined) {
      process.kill(orphan, 'SIGTERM');
      stopping.push(orphan);
      say(`stopping orphaned ${name} (pid ${orphan})`);
    }
    rmSync(join(s.stateDir, `${name}.pid`), { force: true });
  }
  // They drain first (authz up to 6.5 s); their ports are free once they are gone.
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 150 && stopping.some(alive); i++) await sleep(100);
  for (const pid of stopping.filter(alive)) process.kill(pid, 'SIGKILL');
}

function printWelcome(s: UpSettings): void {
  const port = s.gateway.port;
  const redis = s.redis ? `${s.svc.redisUrl} (its own; append-only file in ${s.redis.dir})` : `${s.svc.redisUrl}`;
  process.stdout.write(`
The gateway is up.
  Base URL:  https://localhost:${port}   (OpenAI SDKs: baseURL https://localhost:${port}/v1)
  CA:        ${s.caFile}
  Model:     ${s.svc.modelId}
  Redis:     ${redis}
  Logs:      ${s.logDir}/   (make logs)      Stop: make down
  Metrics:   http://127.0.0.1:${s.envoyAdminPort}/stats/prometheus (Envoy), http://127.0.0.1:${s.baseEnv?.AUTHZ_METRICS_PORT ?? settingDefault('AUTHZ_METRICS_PORT')}/metrics (authz, with "authorization: Bearer" the token in ${s.svc.metricsTokenFile}), http://${s.embedder.host}:${s.embedder.port}/metrics (embedder, the same token)
  Prometheus: make prometheus, then http://127.0.0.1:9090   (alerts and dashboard: deploy/prometheus/README.md)

Create an organization and an API key (exported as KEY for the curl below and the README's and docs/clients.md's clients):
  npm run admin -- org create acme --models ${s.svc.modelId}
  export KEY=$(npm run -s admin -- key create --org acme --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')

Then:
  curl --cacert ${s.caFile} https://localhost:${port}/v1/embeddings \\
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\
    -d '{"model": "${s.svc.modelId}", "input": "Patient denies chest pain."}'
`);
}

async function main(): Promise<number> {
  let settings: UpSettings;
  try {
    settings = upSettings(process.env);
  } catch (err) {
    say((err as Error).message);
    return 2;
  }
  const command = process.argv[2];
  if (command === 'up') return up(settings);
  if (command === 'down') return down(settings);
  say('usage: cli.ts up|down');
  return 2;
}

process.exitCode = await main();
