/**
 * `org create|update|show|list`: organizations, their display name, endpoints, models and
 * limit overrides, through the admin core.
 */
import { parseArgs } from 'node:util';
import { limitOption, listOption, type Command } from './context.js';

const options = {
  name: { type: 'string' },
  models: { type: 'string' },
  endpoints: { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
} as const;

function parse(args: string[]) {
  const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
  const input = {
    name: values.name,
    models: listOption(values.models),
    endpoints: listOption(values.endpoints),
    rpm: limitOption('rpm', values.rpm),
    tpm: limitOption('tpm', values.tpm),
  };
  return { id: positionals[0], input };
}

const create: Command = async (args, { ops, who }) => {
  const { id, input } = parse(args);
  return { ...(await ops.createOrg({ id, ...input }, who)) };
};

const update: Command = async (args, { ops, who }) => {
  const { id, input } = parse(args);
  return { ...(await ops.updateOrg(id, input, who)) };
};

const show: Command = async (args, { ops }) => ({ ...(await ops.showOrg(parse(args).id)) });

const list: Command = async (_args, { ops }) => ({ orgs: await ops.listOrgs() });

export const orgCommands: Readonly<Record<string, Command>> = { create, update, show, list };
