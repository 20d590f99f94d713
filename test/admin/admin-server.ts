/**
 * The admin server started as a user starts it: `make console`, beside a test stack. The
 * stack's Redis prefix, key-hash secret and model come in through the environment the Makefile
 * passes on, plus a free port and an audit secret of its own; the bootstrap owner token is
 * `.local/admin-token` (created by the target when missing), registered as `local-owner`'s.
 * Stopped by signalling the process group it was started in (make, then node).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitFor } from '../support/process.js';
import { redisUrl, repoRoot, type Stack } from '../support/stack.js';

export interface AdminServer {
  readonly url: string;
  readonly token: string;
  stop(): Promise<void>;
}

/** Runs `make console` for `stack`; resolves once it serves the console page. */
export async function startAdminServer(stack: Stack): Promise<AdminServer> {
  const port = await freePort();
  const log = openSync(join(stack.dirs.logDir, 'admin.log'), 'a');
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(port),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: stack.svc.redisKeyPrefix,
    KEY_HASH_SECRET_FILE: stack.dirs.secretFile,
    MODEL_ID: stack.svc.modelId,
    MODEL_DIR: stack.svc.modelDir,
    LOG_LEVEL: 'warn',
    AUDIT_SECRET: randomBytes(32).toString('hex'),
    AUDIT_ANCHOR_FILE: join(stack.dirs.dir, 'audit-anchor.jsonl'),
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
        if (gone) throw new Error(`make console exited; see ${join(stack.dirs.logDir, 'admin.log')}`);
        return (await fetch(`${url}/`).catch(() => null))?.ok === true;
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, token: readFileSync(join(repoRoot, '.local/admin-token'), 'utf8').trim(), stop };
}
