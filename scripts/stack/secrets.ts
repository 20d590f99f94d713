/**
 * The stack's shared secrets between two of its parts (authz and Envoy: the caller token;
 * authz and Prometheus: the metrics token): created once, random, readable by their owner only,
 * and kept across restarts so a running peer never holds a stale copy.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes 32 random bytes (hex) to `file` unless it already exists; never overwrites. */
export function ensureSecretFile(file: string): void {
  if (existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  // 'wx': if another process created it meanwhile, theirs stands.
  try {
    writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}
