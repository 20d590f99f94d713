/**
 * `key create|revoke|list`. The full key is printed once, at creation, and never stored: Redis
 * holds only its id and the HMAC of its secret.
 */
import { parseArgs } from 'node:util';
import type { KeyRecord } from '../policy/access.js';
import { hashSecret, mintKey } from '../policy/keys.js';
import { AdminError, timeOption, type AdminContext, type Command } from './context.js';
import { existing, orgIdArg } from './org-commands.js';

const MINT_ATTEMPTS = 5;

/** A key as `key list` prints it: never the secret or its hash. */
function keyView(key: KeyRecord, now: number): Record<string, unknown> {
  const expired = key.expiresAt !== null && now >= key.expiresAt;
  return {
    id: key.id,
    org: key.org,
    name: key.name,
    createdAt: new Date(key.createdAt).toISOString(),
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    revoked: key.revoked,
    status: key.revoked ? 'revoked' : expired ? 'expired' : 'active',
  };
}

const create: Command = async (args, context) => {
  const { values } = parseArgs({
    args,
    options: { org: { type: 'string' }, name: { type: 'string' }, 'expires-at': { type: 'string' } },
    strict: true,
  });
  const org = await existing(orgIdArg(values.org), context);
  const expiresAt = timeOption('expires-at', values['expires-at']) ?? null;
  const name = (values.name ?? '').slice(0, 200);
  for (let attempt = 0; attempt < MINT_ATTEMPTS; attempt += 1) {
    const minted = mintKey(context.config.keyPrefix);
    const record: KeyRecord = {
      id: minted.id,
      org: org.id,
      name,
      hash: hashSecret(minted.id, minted.secret, context.config.keyHashSecret),
      createdAt: context.now(),
      expiresAt,
      revoked: false,
    };
    if (await context.store.createKey(record)) {
      return { ...keyView(record, context.now()), key: minted.key };
    }
  }
  throw new AdminError('could not mint an unused key id');
};

const revoke: Command = async (args, context) => {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true });
  const id = positionals[0];
  const key = id ? await context.store.getKey(id) : null;
  if (!key) throw new AdminError(`no key ${id ?? '(missing id)'}`, id ? 1 : 2);
  const revoked = { ...key, revoked: true };
  await context.store.saveKey(revoked);
  return keyView(revoked, context.now());
};

const list: Command = async (args, context: AdminContext) => {
  const { values } = parseArgs({ args, options: { org: { type: 'string' } }, strict: true });
  const org = await existing(orgIdArg(values.org), context);
  const keys = await context.store.listKeys(org.id);
  return { org: org.id, keys: keys.map((key) => keyView(key, context.now())) };
};

export const keyCommands: Readonly<Record<string, Command>> = { create, revoke, list };
