/**
 * admin's one Redis connection (contract/redis-connection.ts: every command bounded), shared by
 * its store modules: the only place its Lua script (the audit append) is registered, once.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { RedisConnection } from '../../../contract/redis-connection.js';
import type { RedisSettings } from '../../../contract/redis-target.js';

/** The Lua scripts beside this file, as commands on the client. */
export interface Scripts {
  appendAudit(stream: string, head: string, ...args: string[]): Promise<string | null>;
}

const APPEND_AUDIT = readFileSync(new URL('./append-audit.lua', import.meta.url), 'utf8');

/** The bounded client with admin's script registered. */
export class Connection extends RedisConnection<Redis & Scripts> {
  constructor(options: RedisSettings) {
    super(options);
    this.redis.defineCommand('appendAudit', { numberOfKeys: 2, lua: APPEND_AUDIT });
  }
}

/** Opens a connection; it connects in the background and reconnects by itself. */
export function openConnection(options: RedisSettings): Connection {
  return new Connection(options);
}
