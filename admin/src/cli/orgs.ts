/**
 * `org create|update|show|list`: organizations, their display name, endpoints, models and
 * limit overrides, through the admin core.
 */
import { parseArgs } from 'node:util';
import { limitOption, listOption, usageError, type Command } from './context.js';

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

// `org budget <org> --tokens N|"" [--hard-stop] [--alerts 80,100]`: "" removes the budget.
const budget: Command = async (args, { ops, who }) => {
  const { values, positionals } = parseArgs({
    args,
    options: { tokens: { type: 'string' }, 'hard-stop': { type: 'boolean' }, alerts: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.tokens === undefined) return { org: positionals[0], budget: await ops.budgetOf(positionals[0]) };
  const alerts = listOption(values.alerts)?.map((p) => (/^\d{1,4}$/.test(p) ? Number(p) : NaN));
  if (alerts?.some(Number.isNaN)) throw usageError('--alerts must be whole percentages, such as 80,100');
  return {
    ...(await ops.setBudget(
      positionals[0],
      { monthlyTokens: limitOption('tokens', values.tokens), hardStop: values['hard-stop'] === true, alertPercents: alerts },
      who,
    )),
  };
};

const disable: Command = async (args, { ops, who }) => ({ ...(await ops.disableOrg(parse(args).id, who)) });
const enable: Command = async (args, { ops, who }) => ({ ...(await ops.enableOrg(parse(args).id, who)) });
const remove: Command = async (args, { ops, who }) => ({ ...(await ops.deleteOrg(parse(args).id, who)) });

export const orgCommands: Readonly<Record<string, Command>> = { create, update, show, list, budget, disable, enable, delete: remove };
