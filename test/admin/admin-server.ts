/**
 * The admin server started as a user starts it: `make console`, beside a test stack (or just
 * a Redis prefix). The Redis prefix, key-hash secret and model come in through the environment
 * the Makefile passes on, plus a free port and an audit secret (its own, unless given); the
 * bootstrap owner token is `.local/admin-token` (created by the target when missing),
 * registered as `local-owner`'s. Stopped by signalling the process group it was started in
 * (make, then node).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitFor } from '../support/process.js';
import { redisUrl, repoRoot, type Stack } from '../support/stack.js';

/** What `make console` is pointed at: a Redis prefix, the key-hash secret, the model, where to log. */
export interface ConsoleTarget {
  readonly redisKeyPrefix: string;
  readonly secretFile: string;
  readonly modelId: string;
  readonly modelDir?: string;
  /** Where the log and the checkpoint file go. */
  readonly dir: string;
  /** The same secret across restarts keeps the trail's signing key. */
  readonly auditSecret?: string;
}

/** A stack's target. */
export function targetOf(stack: Stack): ConsoleTarget {
  return {
    redisKeyPrefix: stack.svc.redisKeyPrefix,
    secretFile: stack.dirs.secretFile,
    modelId: stack.svc.modelId,
    modelDir: stack.svc.modelDir,
    dir: stack.dirs.dir,
  };
}

export interface AdminServer {
  readonly url: string;
  readonly token: string;
  /** Its log file (stdout and stderr). */
  readonly log: string;
  stop(): Promise<void>;
}

/** Runs `make console` for `target` (a stack's: targetOf); resolves once it serves the console page. */
export async function startAdminServer(target: ConsoleTarget): Promise<AdminServer> {
  const port = await freePort();
  const logFile = join(target.dir, 'admin.log');
  const log = openSync(logFile, 'a');
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(port),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: target.redisKeyPrefix,
    KEY_HASH_SECRET_FILE: target.secretFile,
    MODEL_ID: target.modelId,
    ...(target.modelDir ? { MODEL_DIR: target.modelDir } : {}),
    LOG_LEVEL: 'warn',
    AUDIT_SECRET: target.auditSecret ?? randomBytes(32).toString('hex'),
    AUDIT_ANCHOR_FILE: join(target.dir, 'audit-anchor.jsonl'),
  };
  const child: ChildProcess = spawn('make', ['--no-print-directory', 'console'], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ['ignore', log, log],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (gone || child.pid === undefined) return;
    process.kill(-child.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (!gone) process.kill(-child.pid, 'SIGKILL');
  };
  try {
    await waitFor(
      'make console to serve the console',
      async () => {
        if (gone) throw new Error(`make console exited; see ${logFile}`);
        return (await fetch(`${url}/`).catch(() => null))?.ok === true;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, token: readFileSync(join(repoRoot, '.local/admin-token'), 'utf8').trim(), log: logFile, stop };
}
