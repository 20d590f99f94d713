/**
 * Usage operations of the admin core: totals over a range, per-day series per organization and
 * per key (the console's charts), and export as JSON lines or CSV. Identifiers and counts only.
 */
import { utcDay, type UsageEntry } from '../store/records.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import * as rules from './rules.js';

const DAY_MS = 86_400_000;
const MAX_DAILY_ROWS = 366;
/** The longest series the console asks for. */
export const MAX_SERIES_DAYS = 90;
const CSV_COLUMNS = ['time', 'org', 'key_id', 'model', 'request_id', 'tokens'] as const;
/** How far the clocks of the gateway hosts and Redis may disagree without a chart losing entries. */
const CLOCK_SKEW_MS = 3_600_000;

export type ExportFormat = 'jsonl' | 'csv';

export interface DayPoint {
  readonly day: string;
  readonly requests: number;
  readonly tokens: number;
}

export interface RangeInput {
  readonly since?: unknown;
  readonly until?: unknown;
}

/** The UTC days from `since` to `until`, at most `max` (the most recent ones). */
export function daysBetween(since: number, until: number, max = MAX_DAILY_ROWS): string[] {
  const days: string[] = [];
  for (let t = Date.parse(utcDay(until)); t >= since - DAY_MS + 1 && days.length < max; t -= DAY_MS) days.push(utcDay(t));
  return days.reverse();
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One usage entry as an export line. */
export function exportLine(entry: UsageEntry, format: ExportFormat): string {
  const row = { time: new Date(entry.time).toISOString(), org: entry.org, key_id: entry.keyId, model: entry.model, request_id: entry.requestId, tokens: entry.tokens };
  if (format === 'jsonl') return `${JSON.stringify(row)}\n`;
  return `${CSV_COLUMNS.map((column) => csvField(String(row[column]))).join(',')}\n`;
}

/** Usage operations bound to `deps`. */
export function usageOperations(deps: AdminDeps) {
  return {
    /** Totals for one organization over a range, per model, and its daily counters. */
    async usageTotals(orgInput: unknown, rangeInput: RangeInput) {
      const org = rules.orgId(orgInput);
      const { since, until } = rules.range(rangeInput.since, rangeInput.until);
      let requests = 0;
      let tokens = 0;
      const models: Record<string, { requests: number; tokens: number }> = {};
      for await (const entry of deps.reports.readUsage({ org, since, until })) {
        requests += 1;
        tokens += entry.tokens;
        const model = (models[entry.model] ??= { requests: 0, tokens: 0 });
        model.requests += 1;
        model.tokens += entry.tokens;
      }
      const end = until ?? deps.now();
      const daily = await deps.reports.readDaily(org, daysBetween(since ?? end - 30 * DAY_MS, end));
      const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
      return {
        org, since: iso(since), until: iso(until), requests, tokens, models,
        daily: daily.map(({ day, counters }) => ({ day, requests: counters.requests ?? 0, tokens: counters.tokens ?? 0 })),
      };
    },

    /** The last `days` UTC days (today included) for an organization and each of its keys, zeros filled in. */
    async usageSeries(orgInput: unknown, daysInput: unknown) {
      const org = rules.orgId(orgInput);
      if (typeof daysInput !== 'number' || !Number.isInteger(daysInput) || daysInput < 1 || daysInput > MAX_SERIES_DAYS) throw invalid('days', `must be an integer from 1 to ${MAX_SERIES_DAYS}`);
      const now = deps.now();
      const days = daysBetween(now - (daysInput - 1) * DAY_MS, now, daysInput);
      const counters = new Map((await deps.reports.readDaily(org, days)).map((row) => [row.day, row.counters]));
      const perKey = new Map<string, Map<string, DayPoint>>();
      const since = Date.parse(days[0]!);
      // The console asks for this on every view: scan only the period, not the whole history.
      for await (const entry of deps.reports.readUsage({ org, since, until: now, appendedFrom: since - CLOCK_SKEW_MS })) {
        const series = perKey.get(entry.keyId) ?? perKey.set(entry.keyId, new Map()).get(entry.keyId)!;
        const day = utcDay(entry.time);
        const point = series.get(day) ?? { day, requests: 0, tokens: 0 };
        series.set(day, { day, requests: point.requests + 1, tokens: point.tokens + entry.tokens });
      }
      const fill = (lookup: (day: string) => Partial<DayPoint> | undefined): DayPoint[] =>
        days.map((day) => ({ day, requests: lookup(day)?.requests ?? 0, tokens: lookup(day)?.tokens ?? 0 }));
      return {
        org,
        days: fill((day) => counters.get(day)),
        keys: [...perKey.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([keyId, series]) => ({ keyId, days: fill((day) => series.get(day)) })),
      };
    },

    /**
     * Validates and audits an export, then returns its lines (CSV with a header row) to stream:
     * a bad request fails here, before a front end has sent anything.
     */
    async openExport(query: { org?: unknown; format?: unknown } & RangeInput, who: Who): Promise<AsyncIterable<string>> {
      const format = query.format;
      if (format !== 'jsonl' && format !== 'csv') throw invalid('format', 'must be jsonl or csv');
      const org = query.org === undefined ? undefined : rules.orgId(query.org);
      const range = rules.range(query.since, query.until);
      await deps.audit.record({ ...who, action: 'usage.export', target: org === undefined ? 'usage' : `org:${org}`, detail: { format, ...isoRange(range) } });
      const entries = deps.reports.readUsage({ org, ...range });
      return (async function* lines() {
        if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\n`;
        for await (const entry of entries) yield exportLine(entry, format);
      })();
    },
  };
}

function isoRange(range: { since?: number; until?: number }): Record<string, string | null> {
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return { since: iso(range.since), until: iso(range.until) };
}
