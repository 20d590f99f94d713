/**
 * The admin server (console + admin API) as a child process beside a test stack: the same
 * Redis prefix, key-hash secret and model as the stack's authz, a fresh admin token, a free port.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, readyOrStopped, startTsProcess, waitFor, type ManagedProcess } from '../support/process.js';
import { redisUrl, repoRoot, type Stack } from '../support/stack.js';

export interface AdminServer {
  readonly url: string;
  readonly token: string;
  readonly process: ManagedProcess;
}

/** Starts the admin server for `stack`; resolves once it serves the console page. */
export async function startAdminServer(stack: Stack): Promise<AdminServer> {
  const token = randomBytes(32).toString('base64url');
  const tokenFile = join(stack.dirs.dir, 'admin-token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const port = await freePort();
  const proc = startTsProcess({
    name: 'admin', entry: join(repoRoot, 'authz/src/admin/server-main.ts'), cwd: repoRoot,
    env: {
      ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(port), ADMIN_TOKEN_FILE: tokenFile,
      REDIS_URL: redisUrl, REDIS_KEY_PREFIX: stack.svc.redisKeyPrefix, KEY_HASH_SECRET_FILE: stack.dirs.secretFile,
      MODEL_ID: stack.svc.modelId, MODEL_DIR: stack.svc.modelDir, LOG_LEVEL: 'warn',
    },
    logFile: join(stack.dirs.logDir, 'admin.log'),
  });
  const url = `http://127.0.0.1:${port}`;
  await readyOrStopped(proc, waitFor('the admin server', async () => (await fetch(`${url}/`)).ok, 60_000, [proc]));
  return { url, token, process: proc };
}
