/**
 * The admin CLI: `npm run admin -- <command> [--json]`. With `--json`, exactly one JSON object
 * goes to stdout (the result, or `{"error": …}`); without it, the same fields as readable lines.
 *
 *   org create <org> [--models a,b] [--endpoints embeddings] [--rpm N] [--tpm N]
 *   org update <org> [--models …] [--endpoints …] [--rpm N|""] [--tpm N|""]
 *   org show <org> | org list
 *   key create --org <org> [--name s] [--expires-at ISO-8601] | key revoke <id> | key list --org <org>
 *   usage --org <org> [--since ISO] [--until ISO]
 *   usage export [--org <org>] [--since ISO] [--until ISO] --format jsonl|csv
 */
import { ConfigError, loadConfig } from '../config.js';
import { createStore } from '../store/redis.js';
import { AdminError, type Command, type CommandResult } from './context.js';
import { keyCommands } from './key-commands.js';
import { orgCommands } from './org-commands.js';
import { usageCommand } from './usage-commands.js';

const USAGE = `usage: npm run admin -- <org|key|usage> … [--json]
  org create <org> [--models a,b] [--endpoints embeddings] [--rpm N] [--tpm N]
  org update <org> [--models a,b] [--endpoints …] [--rpm N|""] [--tpm N|""]
  org show <org> | org list
  key create --org <org> [--name s] [--expires-at ISO-8601]
  key revoke <id> | key list --org <org>
  usage --org <org> [--since ISO] [--until ISO]
  usage export [--org <org>] [--since ISO] [--until ISO] --format jsonl|csv`;

function resolve(args: string[]): { command: Command; rest: string[] } {
  const [group, name, ...rest] = args;
  if (group === 'usage') return { command: usageCommand, rest: args.slice(1) };
  const table = group === 'org' ? orgCommands : group === 'key' ? keyCommands : undefined;
  const command = table && name ? table[name] : undefined;
  if (!command) throw new AdminError(USAGE, 2);
  return { command, rest };
}

function human(result: Record<string, unknown>): string {
  return Object.entries(result)
    .map(([field, value]) => `${field}: ${typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)}`)
    .join('\n');
}

async function run(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((arg) => arg !== '--json');
  const fail = (message: string, code: number): number => {
    if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`${message}\n`);
    return code;
  };
  let store: ReturnType<typeof createStore> | undefined;
  try {
    const { command, rest } = resolve(args);
    const config = loadConfig();
    store = createStore({ url: config.redisUrl, sentinels: config.redisSentinels, sentinelName: config.redisSentinelName, prefix: config.redisKeyPrefix, timeoutMs: Math.max(config.redisTimeoutMs, 2000) });
    await store.ready();
    const result: CommandResult = await command(rest, { config, store, now: Date.now, write: (text) => process.stdout.write(text) });
    if (result) process.stdout.write(`${json ? JSON.stringify(result) : human(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof AdminError) return fail(error.message, error.exitCode);
    if (error instanceof ConfigError) return fail(error.message, 2);
    // parseArgs rejects unknown options and missing values with a TypeError naming the option.
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) return fail(error.message, 2);
    return fail(error instanceof Error ? error.message : String(error), 1);
  } finally {
    await store?.close();
  }
}

run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
