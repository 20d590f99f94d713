/**
 * `usage` (totals for one organization over a time range) and `usage export` (every recorded
 * request as JSON lines or CSV). Records hold identifiers and counts only.
 */
import { parseArgs } from 'node:util';
import { utcDay, type UsageEntry } from '../store/records.js';
import { AdminError, timeOption, type AdminContext, type Command } from './context.js';
import { orgIdArg } from './org-commands.js';

const DAY_MS = 86_400_000;
const MAX_DAILY_ROWS = 366;
const CSV_COLUMNS = ['time', 'org', 'key_id', 'model', 'request_id', 'tokens'] as const;

const rangeOptions = { org: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } } as const;

function range(values: { since?: string; until?: string }): { since?: number; until?: number } {
  const since = timeOption('since', values.since);
  const until = timeOption('until', values.until);
  if (since !== undefined && until !== undefined && since > until) throw new AdminError('--since must not be after --until', 2);
  return { since, until };
}

/** The UTC days from `since` to `until`, at most a year's worth (the most recent ones). */
function daysBetween(since: number, until: number): string[] {
  const days: string[] = [];
  for (let t = Date.parse(utcDay(until)); t >= since - DAY_MS + 1 && days.length < MAX_DAILY_ROWS; t -= DAY_MS) days.push(utcDay(t));
  return days.reverse();
}

const totals: Command = async (args, context) => {
  const { values } = parseArgs({ args, options: rangeOptions, strict: true });
  const org = orgIdArg(values.org);
  const { since, until } = range(values);
  let requests = 0;
  let tokens = 0;
  const models: Record<string, { requests: number; tokens: number }> = {};
  for await (const entry of context.reports.readUsage({ org, since, until })) {
    requests += 1;
    tokens += entry.tokens;
    const model = (models[entry.model] ??= { requests: 0, tokens: 0 });
    model.requests += 1;
    model.tokens += entry.tokens;
  }
  const end = until ?? context.now();
  const daily = await context.reports.readDaily(org, daysBetween(since ?? end - 30 * DAY_MS, end));
  return {
    org,
    since: since === undefined ? null : new Date(since).toISOString(),
    until: until === undefined ? null : new Date(until).toISOString(),
    requests,
    tokens,
    models,
    daily: daily.map(({ day, counters }) => ({ day, requests: counters.requests ?? 0, tokens: counters.tokens ?? 0 })),
  };
};

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function formatEntry(entry: UsageEntry, format: 'jsonl' | 'csv'): string {
  const row = { time: new Date(entry.time).toISOString(), org: entry.org, key_id: entry.keyId, model: entry.model, request_id: entry.requestId, tokens: entry.tokens };
  if (format === 'jsonl') return `${JSON.stringify(row)}\n`;
  return `${CSV_COLUMNS.map((column) => csvField(String(row[column]))).join(',')}\n`;
}

const exportUsage: Command = async (args, context: AdminContext) => {
  const { values } = parseArgs({ args, options: { ...rangeOptions, format: { type: 'string' } }, strict: true });
  const format = values.format;
  if (format !== 'jsonl' && format !== 'csv') throw new AdminError('--format must be jsonl or csv', 2);
  const org = values.org === undefined ? undefined : orgIdArg(values.org);
  if (format === 'csv') context.write(`${CSV_COLUMNS.join(',')}\n`);
  for await (const entry of context.reports.readUsage({ org, ...range(values) })) context.write(formatEntry(entry, format));
  return null;
};

/** `usage …` and `usage export …`. */
export const usageCommand: Command = (args, context) => (args[0] === 'export' ? exportUsage(args.slice(1), context) : totals(args, context));
