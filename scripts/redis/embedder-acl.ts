/**
 * The embedder's Redis ACL user, for a platform team creating it on every Redis node: the rules
 * of contract/redis/settlement-keys.ts (settlementAclRules) for a key prefix.
 *
 *   npx tsx scripts/redis/embedder-acl.ts <prefix> <password-file> [user]
 *     one `ACL SETUSER` command, each argument quoted, for redis-cli's standard input:
 *     … | REDISCLI_AUTH="$ADMIN_PASSWORD" redis-cli --tls --cacert ca.pem -h <node>
 *   npx tsx scripts/redis/embedder-acl.ts <prefix> -
 *     the rules after `reset on >password`, as components/redis-sentinel/start.sh holds them.
 */
import { readFileSync } from 'node:fs';
import { settlementAclRules } from '../../contract/redis/settlement-keys.js';

const PLACEHOLDER = '\u0000password';

/** Quoted for redis-cli's line parser (sdssplitargs): backslashes and double quotes escaped. */
const quote = (arg: string): string => `"${arg.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** The rules that follow `reset on >password` (the part without a secret). */
function rulesAfterPassword(prefix: string): string {
  const rules = settlementAclRules(prefix, PLACEHOLDER);
  const at = rules.indexOf(`>${PLACEHOLDER}`);
  if (at !== 2 || rules[0] !== 'reset' || rules[1] !== 'on') throw new Error('settlementAclRules no longer starts with reset on >password');
  return rules.slice(at + 1).join(' ');
}

/** `ACL SETUSER user …rules` with every argument quoted. */
function setUserCommand(prefix: string, password: string, user: string): string {
  return ['ACL', 'SETUSER', user, ...settlementAclRules(prefix, password)].map(quote).join(' ');
}

const [prefix, passwordFile, user = 'ctg-embedder'] = process.argv.slice(2);
if (!prefix || !passwordFile) {
  console.error('usage: tsx scripts/redis/embedder-acl.ts <prefix> <password-file|-> [user]');
  process.exit(2);
}
console.log(passwordFile === '-' ? rulesAfterPassword(prefix) : setUserCommand(prefix, readFileSync(passwordFile, 'utf8').trim(), user));
