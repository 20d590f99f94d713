/**
 * admin's one Redis connection (contract/redis-connection.ts: every command bounded), shared by
 * its store modules: the only place its Lua scripts (the audit trail's append, a change's
 * apply and its journal entry's close, the trail's move to its tagged keys) are registered, once.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { RedisConnection } from '../../../contract/redis-connection.js';
import type { RedisSettings } from '../../../contract/redis-target.js';

/** The Lua scripts beside this file, as commands on the client. */
export interface Scripts {
  appendAudit(stream: string, head: string, journal: string, busy: string, ...args: string[]): Promise<string | null>;
  /** store/apply-change.lua: the number of keys, the keys, then the seq and the spec. */
  applyChange(numberOfKeys: number, ...args: string[]): Promise<number>;
  closeChange(journal: string, busy: string, seq: string): Promise<number>;
  migrateAudit(oldStream: string, oldHead: string, stream: string, head: string): Promise<number>;
}

const lua = (name: string): string => readFileSync(new URL(`./${name}.lua`, import.meta.url), 'utf8');

/** The bounded client with admin's script registered. */
export class Connection extends RedisConnection<Redis & Scripts> {
  constructor(options: RedisSettings) {
    super(options);
    this.redis.defineCommand('appendAudit', { numberOfKeys: 4, lua: lua('append-audit') });
    this.redis.defineCommand('applyChange', { lua: lua('apply-change') });
    this.redis.defineCommand('closeChange', { numberOfKeys: 2, lua: lua('close-change') });
    this.redis.defineCommand('migrateAudit', { numberOfKeys: 4, lua: lua('migrate-audit') });
  }
}

/** Opens a connection; it connects in the background and reconnects by itself. */
export function openConnection(options: RedisSettings): Connection {
  return new Connection(options);
}
