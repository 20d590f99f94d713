/**
 * `usage` (totals for one organization over a time range), `usage export` (every recorded
 * request as JSON lines or CSV) and `usage billing` (per period, organization, key and kind, with
 * names: for a finance office), through the admin core. Identifiers, names and counts only.
 */
import { parseArgs } from 'node:util';
import type { Command } from './context.js';

const rangeOptions = { org: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } } as const;

const totals: Command = async (args, { ops }) => {
  const { values } = parseArgs({ args, options: rangeOptions, strict: true });
  return { ...(await ops.usageTotals(values.org, values)) };
};

const exportUsage: Command = async (args, { ops, who, write }) => {
  const { values } = parseArgs({ args, options: { ...rangeOptions, format: { type: 'string' } }, strict: true });
  for await (const line of await ops.openExport(values, who)) write(line);
  return null;
};

const billing: Command = async (args, { ops, who, write }) => {
  const { values } = parseArgs({
    args,
    options: { ...rangeOptions, period: { type: 'string' }, format: { type: 'string' } },
    strict: true,
  });
  write(await ops.openBillingExport(values, who));
  return null;
};

/** `usage …`, `usage export …` and `usage billing …`. */
export const usageCommand: Command = (args, context) =>
  args[0] === 'export'
    ? exportUsage(args.slice(1), context)
    : args[0] === 'billing'
      ? billing(args.slice(1), context)
      : totals(args, context);
