/**
 * make up's supervisor: runs in the background (started by cli.ts), starts the local stack,
 * restarts a component that dies (with backoff, giving up loudly when it keeps crashing), keeps
 * each component's pid file current, and on SIGTERM drains and stops everything, Envoy first.
 * Its own log is <state>/logs/stack.log.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalStack, type LocalStack } from './local-stack.js';
import { upSettings } from './settings.js';
import { describeEvent, type SupervisorEvent } from './supervisor.js';

const settings = upSettings(process.env);
const pidFile = (name: string) => join(settings.stateDir, `${name}.pid`);
const stateFile = join(settings.stateDir, 'stack.state');
const say = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);

function onEvent(event: SupervisorEvent): void {
  say(describeEvent(event));
  if (event.kind === 'started') writeFileSync(pidFile(event.name), `${event.pid}\n`);
  if (event.kind === 'gave-up') {
    rmSync(pidFile(event.name), { force: true });
    writeFileSync(stateFile, `failed: ${event.message}\n`);
  }
}

function removeState(): void {
  for (const name of ['envoy', 'embedder', 'authz', 'redis']) rmSync(pidFile(name), { force: true });
  rmSync(stateFile, { force: true });
}

let stack: LocalStack | undefined;
let stopping = false;

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  say(`${signal}: draining and stopping the stack`);
  await stack?.stop();
  removeState();
  process.exit(0);
}

async function main(): Promise<void> {
  mkdirSync(settings.logDir, { recursive: true });
  if (settings.redis) {
    mkdirSync(settings.redis.dir, { recursive: true });
    writeFileSync(settings.redisUrlFile, `${settings.svc.redisUrl}\n`);
  }
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  writeFileSync(stateFile, 'starting\n');
  try {
    stack = await startLocalStack(settings, onEvent);
  } catch (err) {
    say(`the stack did not come up: ${(err as Error).message}`);
    removeState();
    writeFileSync(stateFile, `failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
  if (!stopping) writeFileSync(stateFile, 'ready\n');
  say('the stack is ready');
}

void main();
