/**
 * `audit verify` (checks the hash chain; exit 1 when it is broken) and `audit list [--limit N]`.
 */
import { parseArgs } from 'node:util';
import { AdminError, usageError, type Command } from './context.js';

const verify: Command = async (_args, { ops }) => {
  const verdict = await ops.auditVerify();
  if (!verdict.ok) throw new AdminError('conflict', `audit chain broken at record ${verdict.brokenAt}: ${verdict.reason}`);
  return { ...verdict };
};

const list: Command = async (args, { ops }) => {
  const { values } = parseArgs({ args, options: { limit: { type: 'string' } }, strict: true });
  const limit = values.limit ?? '50';
  if (!/^\d{1,4}$/.test(limit)) throw usageError('--limit must be a whole number');
  return { ...(await ops.auditRecent(Number(limit))) };
};

export const auditCommands: Readonly<Record<string, Command>> = { verify, list };
