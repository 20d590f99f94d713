/**
 * The admin CLI: `npm run admin -- <command> [--json]`. With `--json`, exactly one JSON object
 * goes to stdout (the result, or `{"error": …}`); without it, the same fields as readable lines.
 * Every command calls the operations (operations/operations.ts), as the console does; changes
 * are audited as `cli:<os user>` from `cli@<host>`. `--help` prints the usage and exits 0.
 */
import { hostname, userInfo } from 'node:os';
import { ConfigError, loadCliConfig } from '../config.js';
import type { Connection } from '../store/connection.js';
import { adminCommands } from './administrators.js';
import { auditCommands } from './audit.js';
import type { Command, CommandResult } from './context.js';
import { openAdminDeps } from '../operations/deps.js';
import { AdminError } from '../operations/errors.js';
import { keyCommands } from './keys.js';
import { createOperations } from '../operations/operations.js';
import { orgCommands } from './orgs.js';
import { usageCommand } from './usage.js';

const USAGE = `usage: npm run admin -- <org|key|usage|audit|admin> … [--json]   (--help: this text)
  org create <org> [--name s] [--models a,b] [--endpoints embeddings] [--rpm N] [--tpm N]
  org update <org> [--name s] [--models a,b] [--endpoints …] [--rpm N|""] [--tpm N|""]
  org show <org> | org list | org disable <org> | org enable <org> | org delete <org> (disabled first)
  org budget <org> [--tokens N|"" [--hard-stop] [--alerts 80,100]]  (tokens per UTC month; "" removes)
  key create --org <org> [--name s] [--expires-at ISO-8601]
  key update <id> [--name s] [--expires-at ISO-8601|""]
  key rotate <id> [--overlap SECONDS (default 3600)]
  key revoke <id> | key list --org <org>
  usage --org <org> [--since ISO] [--until ISO]
  usage export [--org <org>] [--since ISO] [--until ISO] --format jsonl|csv
  audit verify | audit list [--limit N]
  admin create <name> --role viewer|operator|owner | admin list
  admin update <name> [--role …] [--disabled true|false]
  admin token create <name> | admin token revoke <name> <id>`;

const GROUPS: Readonly<Record<string, Readonly<Record<string, Command>>>> = {
  org: orgCommands,
  key: keyCommands,
  audit: auditCommands,
  admin: adminCommands,
};

function resolve(args: string[]): { command: Command; rest: string[] } {
  const [group, name, ...rest] = args;
  if (group === 'usage') return { command: usageCommand, rest: args.slice(1) };
  const command = group && name ? GROUPS[group]?.[name] : undefined;
  if (!command) throw new AdminError('invalid', USAGE);
  return { command, rest };
}

function human(result: Record<string, unknown>): string {
  return Object.entries(result)
    .map(([field, value]) => `${field}: ${typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)}`)
    .join('\n');
}

/** True when the user asked for the usage text (`--help`, `-h` or `help`) rather than a command. */
function wantsHelp(args: readonly string[]): boolean {
  return args[0] === 'help' || args.includes('--help') || args.includes('-h');
}

async function run(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((arg) => arg !== '--json');
  // Asked for, the usage is an answer (stdout, exit 0) and needs no settings or Redis.
  if (wantsHelp(args)) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const fail = (message: string, code: number): number => {
    if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`${message}\n`);
    return code;
  };
  let connection: Connection | undefined;
  try {
    const { command, rest } = resolve(args);
    const opened = openAdminDeps(loadCliConfig());
    connection = opened.connection;
    await connection.ready();
    const who = { actor: `cli:${userInfo().username}`, from: `cli@${hostname()}` };
    const write = (text: string): void => void process.stdout.write(text);
    const result: CommandResult = await command(rest, { ops: createOperations(opened.deps), who, write });
    if (result) process.stdout.write(`${json ? JSON.stringify(result) : human(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof AdminError) return fail(error.message, error.exitCode);
    if (error instanceof ConfigError) return fail(error.message, 2);
    // parseArgs rejects unknown options and missing values with a TypeError naming the option.
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) return fail(error.message, 2);
    return fail(error instanceof Error ? error.message : String(error), 1);
  } finally {
    await connection?.close();
  }
}

// run() answers every command error itself; what is left (closing the connection failed) still
// ends the CLI with its message and exit 1 rather than as an unhandled rejection.
run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
