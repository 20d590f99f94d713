/**
 * `org create|update|show|list`: organizations, their endpoints, models and limit overrides.
 */
import { parseArgs } from 'node:util';
import type { OrgRecord } from '../policy/access.js';
import { AdminError, limitOption, type AdminContext, type Command } from './context.js';

const ORG_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._\/-]{0,127}$/;
const KNOWN_ENDPOINTS = ['embeddings'];

const options = {
  models: { type: 'string' },
  endpoints: { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
} as const;

/** The organization as commands print it, with the limits that apply. */
export function orgView(org: OrgRecord, context: AdminContext): Record<string, unknown> {
  return {
    id: org.id,
    endpoints: org.endpoints,
    models: org.models,
    rpm: org.rpm ?? context.config.defaultRpm,
    tpm: org.tpm ?? context.config.defaultTpm,
    rpmIsDefault: org.rpm === null,
    tpmIsDefault: org.tpm === null,
    createdAt: new Date(org.createdAt).toISOString(),
  };
}

/** Validates an organization id argument. */
export function orgIdArg(value: string | undefined): string {
  if (!value || !ORG_ID.test(value)) throw new AdminError('an organization id (1-64 of A-Z a-z 0-9 . _ -, no colon) is required', 2);
  return value;
}

function list(name: string, raw: string, pattern: RegExp, allowed?: readonly string[]): string[] {
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const item of items) {
    if (!pattern.test(item) || (allowed && !allowed.includes(item))) {
      throw new AdminError(`--${name}: ${JSON.stringify(item)} is not valid${allowed ? ` (known: ${allowed.join(', ')})` : ''}`, 2);
    }
  }
  return [...new Set(items)];
}

function parse(args: string[]) {
  const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
  return { id: orgIdArg(positionals[0]), values };
}

const create: Command = async (args, context) => {
  const { id, values } = parse(args);
  const org: OrgRecord = {
    id,
    // No --models grants the served model; --models "" grants none.
    models: values.models === undefined ? [context.config.modelId] : list('models', values.models, MODEL_ID),
    endpoints: values.endpoints === undefined ? [...KNOWN_ENDPOINTS] : list('endpoints', values.endpoints, /^[a-z]+$/, KNOWN_ENDPOINTS),
    rpm: limitOption('rpm', values.rpm) ?? null,
    tpm: limitOption('tpm', values.tpm) ?? null,
    createdAt: context.now(),
  };
  if (!(await context.store.createOrg(org))) throw new AdminError(`organization ${id} already exists`);
  return orgView(org, context);
};

const update: Command = async (args, context) => {
  const { id, values } = parse(args);
  const org = await existing(id, context);
  const rpm = limitOption('rpm', values.rpm);
  const tpm = limitOption('tpm', values.tpm);
  const updated: OrgRecord = {
    ...org,
    models: values.models === undefined ? org.models : list('models', values.models, MODEL_ID),
    endpoints: values.endpoints === undefined ? org.endpoints : list('endpoints', values.endpoints, /^[a-z]+$/, KNOWN_ENDPOINTS),
    rpm: rpm === undefined ? org.rpm : rpm,
    tpm: tpm === undefined ? org.tpm : tpm,
  };
  await context.store.saveOrg(updated);
  return orgView(updated, context);
};

const show: Command = async (args, context) => {
  const { id } = parse(args);
  const org = await existing(id, context);
  const keys = await context.store.listKeys(id);
  return { ...orgView(org, context), keys: keys.length };
};

const listOrgs: Command = async (_args, context) => {
  const orgs = await context.store.listOrgs();
  return { orgs: orgs.map((org) => orgView(org, context)) };
};

/** The organization `id`, or an AdminError when there is none. */
export async function existing(id: string, context: AdminContext): Promise<OrgRecord> {
  const org = await context.store.getOrg(id);
  if (!org) throw new AdminError(`no organization ${id}`);
  return org;
}

export const orgCommands: Readonly<Record<string, Command>> = { create, update, show, list: listOrgs };
