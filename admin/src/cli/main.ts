/**
 * The admin CLI: `npm run admin -- <command> [--json]`. With `--json`, exactly one JSON object
 * goes to stdout (the result, or `{"error": …}`); without it, the same fields as readable lines.
 * Every command calls the operations (operations/operations.ts), as the console does, as the
 * administrator whose token the CLI holds (identity.ts), with that administrator's role checked
 * per command; changes are audited as `admin:<name>` from `cli:<os user>@<host>`. `--help`
 * prints the usage and `audit verify --file` checks an export, both without settings or Redis.
 */
import { hostname, userInfo } from 'node:os';
import { ConfigError, loadCliConfig } from '../config.js';
import type { Connection } from '../store/connection.js';
import { adminCommands } from './administrators.js';
import { auditCommands, offlineVerify } from './audit.js';
import type { Command, CommandResult } from './context.js';
import { checkRole, cliActor } from './identity.js';
import type { Role } from '../operations/rules.js';
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
  usage export [--org <org>] [--since T] [--until T] --format jsonl|csv   (one line per request)
  usage billing [--org <org>] [--since T] [--until T] [--period day|month] [--format csv|json]
  audit verify                                       (the trail in Redis and the checkpoint file)
  audit verify --file <export.jsonl> --public-key <pem> [--previous <earlier export.jsonl>]…   (offline)
  audit export [--format jsonl|csv] [--actor s] [--action s] [--target s] [--since T] [--until T]
  audit public-key | audit list [--limit N]
  admin create <name> --role viewer|operator|owner | admin list
  admin update <name> [--role …] [--disabled true|false]
  admin token create <name> | admin token revoke <name> <id>
T: a UTC date (YYYY-MM-DD) or an ISO-8601 date-time. The CLI acts as the administrator whose
token is in ADMIN_TOKEN_FILE (or ADMIN_TOKEN; locally .local/admin-token); with no administrator
yet, \`admin create <you> --role owner\` makes the first and prints their token.`;

/** The least role each command needs, as x-required-role does for the admin API (viewer when absent). */
const ROLES: Readonly<Record<string, Role>> = {
  'org create': 'operator',
  'org update': 'operator',
  'org budget': 'operator',
  'org disable': 'operator',
  'org enable': 'operator',
  'org delete': 'operator',
  'key create': 'operator',
  'key update': 'operator',
  'key rotate': 'operator',
  'key revoke': 'operator',
  'admin create': 'owner',
  'admin update': 'owner',
  'admin list': 'owner',
  'admin token': 'owner',
};

const GROUPS: Readonly<Record<string, Readonly<Record<string, Command>>>> = {
  org: orgCommands,
  key: keyCommands,
  audit: auditCommands,
  admin: adminCommands,
};

function resolve(args: string[]): { command: Command; rest: string[]; name: string } {
  const [group, name, ...rest] = args;
  if (group === 'usage') return { command: usageCommand, rest: args.slice(1), name: 'usage' };
  const command = group && name ? GROUPS[group]?.[name] : undefined;
  if (!command) throw new AdminError('invalid', USAGE);
  // `org budget <org>` without --tokens only reads.
  const reads = group === 'org' && name === 'budget' && !rest.includes('--tokens');
  return { command, rest, name: reads ? 'org show' : `${group} ${name}` };
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
  const write = (text: string): void => void process.stdout.write(text);
  const print = (result: CommandResult): void => {
    if (result) write(`${json ? JSON.stringify(result) : human(result)}\n`);
  };
  try {
    const offline = args[0] === 'audit' && args[1] === 'verify' ? offlineVerify(args.slice(2)) : null;
    if (offline) {
      print(await offline());
      return 0;
    }
    const { command, rest, name } = resolve(args);
    const config = loadCliConfig();
    const opened = openAdminDeps(config);
    connection = opened.connection;
    await connection.ready();
    // Changes a crashed admin left recorded but not applied are completed before anything is read.
    await opened.deps.journal.recover();
    const ops = createOperations(opened.deps);
    const actor = await cliActor(ops, config.cliToken, { user: userInfo().username, host: hostname() });
    await checkRole(ops, actor, name, ROLES[name] ?? 'viewer');
    print(await command(rest, { ops, who: actor.who, bootstrap: actor.role === null, write, json }));
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
