/**
 * `audit verify` (the trail as stored, against Redis and the checkpoint file; exit 1 when it is
 * broken), `audit verify --file <export> --public-key <pem> [--previous <earlier export>]…` (the
 * auditor's check of an export, offline: no settings, no Redis, no secret), `audit export`,
 * `audit public-key` and `audit list [--limit N]`.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { invocationDir } from '../config.js';
import { verifyAuditFile } from '../operations/audit-file.js';
import { AdminError, usageError, type Command, type CommandResult } from './context.js';

const verify: Command = async (_args, { ops }) => {
  const verdict = await ops.auditVerify();
  if (!verdict.ok) throw new AdminError('conflict', `audit chain broken at record ${verdict.brokenAt}: ${verdict.reason}`);
  return { ...verdict };
};

/** The offline check when `args` (after `audit verify`) name a file; null otherwise. */
export function offlineVerify(args: readonly string[]): (() => Promise<CommandResult>) | null {
  if (!args.includes('--file')) return null;
  return async () => {
    const { values } = parseArgs({
      args: [...args],
      options: { file: { type: 'string' }, 'public-key': { type: 'string', multiple: true }, previous: { type: 'string', multiple: true } },
      strict: true,
    });
    if (!values.file) throw usageError('--file <export.jsonl> is required');
    const path = (file: string) => resolve(invocationDir(), file);
    const verdict = await verifyAuditFile(path(values.file), (values['public-key'] ?? []).map(path), (values.previous ?? []).map(path));
    if (!verdict.ok)
      throw new AdminError(
        'conflict',
        `audit export ${verdict.file} is broken${verdict.brokenAt === null ? '' : ` at record ${verdict.brokenAt}`}: ${verdict.reason}`,
      );
    return { ...verdict };
  };
}

const FILTERS = {
  actor: { type: 'string' },
  action: { type: 'string' },
  target: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
} as const;

const exportTrail: Command = async (args, { ops, who, write }) => {
  const { values } = parseArgs({ args, options: { ...FILTERS, format: { type: 'string' } }, strict: true });
  for await (const line of await ops.openAuditExport({ ...values, format: values.format ?? 'jsonl' }, who)) write(line);
  return null;
};

const publicKey: Command = async (_args, { ops, json, write }) => {
  const key = ops.auditPublicKey();
  if (json) return { ...key };
  write(key.publicKey);
  return null;
};

const list: Command = async (args, { ops }) => {
  const { values } = parseArgs({ args, options: { limit: { type: 'string' } }, strict: true });
  const limit = values.limit ?? '50';
  if (!/^\d{1,4}$/.test(limit)) throw usageError('--limit must be a whole number');
  return { ...(await ops.auditRecent(Number(limit))) };
};

export const auditCommands: Readonly<Record<string, Command>> = { verify, list, export: exportTrail, 'public-key': publicKey };
