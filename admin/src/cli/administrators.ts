/**
 * `admin create|update|list` and `admin token create|revoke`: named administrators and their
 * tokens, through the admin core. While no administrator exists, this is how the first owner of
 * a deployment is made: `admin create <name> --role owner` also prints their first token, which
 * the CLI then acts with (ADMIN_TOKEN_FILE).
 */
import { parseArgs } from 'node:util';
import { usageError, type Command } from './context.js';

const create: Command = async (args, { ops, who, bootstrap }) => {
  const { values, positionals } = parseArgs({ args, options: { role: { type: 'string' } }, allowPositionals: true, strict: true });
  if (values.role === undefined) throw usageError('--role viewer|operator|owner is required');
  if (bootstrap && values.role !== 'owner') throw usageError('no administrator exists yet: the first one must be an owner (--role owner)');
  const made = await ops.createAdmin({ name: positionals[0], role: values.role }, who);
  // The first owner, made while no administrator existed, gets the token the CLI then acts with.
  if (bootstrap && made.role === 'owner') return { ...made, token: await ops.createAdminToken(made.name, who) };
  return { ...made };
};

const update: Command = async (args, { ops, who }) => {
  const { values, positionals } = parseArgs({
    args,
    options: { role: { type: 'string' }, disabled: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.disabled !== undefined && values.disabled !== 'true' && values.disabled !== 'false')
    throw usageError('--disabled must be true or false');
  const disabled = values.disabled === undefined ? undefined : values.disabled === 'true';
  return { ...(await ops.updateAdmin(positionals[0], { role: values.role, disabled }, who)) };
};

const list: Command = async (_args, { ops }) => ({ ...(await ops.listAdmins()) });

const token: Command = async (args, { ops, who }) => {
  const [verb, name, id] = args;
  if (verb === 'create' && args.length === 2) return { ...(await ops.createAdminToken(name, who)) };
  if (verb === 'revoke' && args.length === 3) return { ...(await ops.revokeAdminToken(name, id, who)) };
  throw usageError('admin token create <name> | admin token revoke <name> <id>');
};

export const adminCommands: Readonly<Record<string, Command>> = { create, update, list, token };
