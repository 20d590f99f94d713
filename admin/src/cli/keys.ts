/**
 * `key create|update|revoke|rotate|list`, through the admin core. The full key is printed
 * once, at creation (or rotation), and never stored.
 */
import { parseArgs } from 'node:util';
import { usageError, type Command } from './context.js';

const create: Command = async (args, { ops, who }) => {
  const { values } = parseArgs({
    args,
    options: { org: { type: 'string' }, name: { type: 'string' }, 'expires-at': { type: 'string' } },
    strict: true,
  });
  return { ...(await ops.createKey({ org: values.org, name: values.name, expiresAt: values['expires-at'] }, who)) };
};

// --expires-at "" removes the expiry.
const update: Command = async (args, { ops, who }) => {
  const { values, positionals } = parseArgs({
    args,
    options: { name: { type: 'string' }, 'expires-at': { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const expiresAt = values['expires-at'] === '' ? null : values['expires-at'];
  return { ...(await ops.updateKey(positionals[0], { name: values.name, expiresAt }, who)) };
};

const revoke: Command = async (args, { ops, who }) => {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true });
  return { ...(await ops.revokeKey(positionals[0], who)) };
};

const rotate: Command = async (args, { ops, who }) => {
  const { values, positionals } = parseArgs({ args, options: { overlap: { type: 'string' } }, allowPositionals: true, strict: true });
  const overlap = values.overlap ?? '3600';
  if (!/^\d{1,8}$/.test(overlap)) throw usageError('--overlap must be a whole number of seconds');
  return { ...(await ops.rotateKey(positionals[0], Number(overlap), who)) };
};

const list: Command = async (args, { ops }) => {
  const { values } = parseArgs({ args, options: { org: { type: 'string' } }, strict: true });
  return { ...(await ops.listKeys(values.org)) };
};

export const keyCommands: Readonly<Record<string, Command>> = { create, update, revoke, rotate, list };
