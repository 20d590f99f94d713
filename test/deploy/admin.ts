/**
 * The authz admin CLI for the deploy tests that run authz outside a full stack (startStack's
 * admin needs its own Envoy): organizations and keys under the test's Redis prefix and secret.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { redisUrl, repoRoot, type ServiceEnv, type StackDir } from '../support/stack.js';

export interface Admin {
  run(args: readonly string[]): string;
  /** A fresh organization with `models` and one key for it. */
  orgWithKey(label: string, models: readonly string[]): { org: string; key: string };
}

/** The admin CLI bound to the Redis prefix and key-hash secret of `svc` and `dirs`. */
export function adminFor(dirs: StackDir, svc: ServiceEnv): Admin {
  const run = (args: readonly string[]): string =>
    execFileSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'admin/src/cli/main.ts'), ...args], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: svc.redisKeyPrefix,
        KEY_HASH_SECRET_FILE: dirs.secretFile,
        MODEL_ID: svc.modelId,
        MODEL_DIR: svc.modelDir,
      },
    });
  return {
    run,
    orgWithKey(label, models) {
      const org = `${label}-${randomBytes(3).toString('hex')}`;
      run(['org', 'create', org, '--models', models.join(',')]);
      return { org, key: (JSON.parse(run(['key', 'create', '--org', org, '--json'])) as { key: string }).key };
    },
  };
}
