/**
 * The embedder's Redis user: created (or reset) before the embedder starts, with exactly the
 * permissions contract/redis/settlement-keys.ts gives it, so the local stack and the tests run
 * the embedder as production does: FCALL of the settlement functions and nothing else.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { settlementAclRules } from '../../contract/redis/settlement-keys.js';

const run = promisify(execFile);

/** Who the embedder is on Redis: an ACL user and the file holding its password. */
export interface SettlementUser {
  readonly username: string;
  readonly passwordFile: string;
}

/** `ACL SETUSER` for the embedder on the Redis at `redisUrl` (the stack's admin connection). */
export async function createSettlementUser(redisUrl: string, prefix: string, user: SettlementUser): Promise<void> {
  const password = readFileSync(user.passwordFile, 'utf8').trim();
  // redis-cli exits 0 on an error reply: read the reply.
  const { stdout } = await run('redis-cli', ['-u', redisUrl, 'ACL', 'SETUSER', user.username, ...settlementAclRules(prefix, password)]);
  if (stdout.trim() !== 'OK') throw new Error(`ACL SETUSER ${user.username} failed: ${stdout.trim()}`);
  // Kept across restarts where Redis has an ACL file (make up's own Redis); elsewhere a no-op error.
  await run('redis-cli', ['-u', redisUrl, 'ACL', 'SAVE']).catch(() => undefined);
}

/** Removes the user (a test stack's, when it stops). */
export async function deleteSettlementUser(redisUrl: string, username: string): Promise<void> {
  await run('redis-cli', ['-u', redisUrl, 'ACL', 'DELUSER', username]);
}
