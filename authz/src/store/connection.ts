/**
 * authz's one Redis connection (contract/redis-connection.ts: every command bounded), shared by
 * its store modules: the only place its Lua scripts are registered (once, with defineCommand).
 * The settlement functions (authz's Check among them) are loaded by settlement.ts.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { RedisConnection } from '../../../contract/redis-connection.js';
import type { RedisSettings } from '../../../contract/redis-target.js';
import { layout, type Layout } from './keys.js';

export { StoreUnavailableError } from '../../../contract/redis-connection.js';

/** Where Redis is (a URL, or Sentinel), the key prefix, and the bound on every command. */
export type StoreOptions = RedisSettings;

/** The Lua scripts beside this file, as commands on the client. */
export interface Scripts {
  lookupKey(key: string, prefix: string): Promise<[string[], string[]]>;
}

const SCRIPTS: ReadonlyArray<[keyof Scripts, string, number]> = [['lookupKey', 'lookup-key', 1]];

const script = (file: string): string => readFileSync(new URL(`./${file}.lua`, import.meta.url), 'utf8');

/** The bounded client with authz's scripts registered, and its key layout. */
export class Connection extends RedisConnection<Redis & Scripts> {
  readonly keys: Layout;

  constructor(options: StoreOptions) {
    super(options);
    this.keys = layout(options.prefix);
    for (const [name, file, numberOfKeys] of SCRIPTS) this.redis.defineCommand(name, { numberOfKeys, lua: script(file) });
  }
}

/** Opens a connection; it connects in the background and reconnects by itself. */
export function openConnection(options: StoreOptions): Connection {
  return new Connection(options);
}
