/**
 * Usage operations of the admin core: totals over a range, per-day series per organization and
 * per key (the console's charts), and export as JSON lines or CSV. Identifiers and counts only.
 */
import { utcDay } from '../../../contract/redis/settlement-keys.js';
import type { UsageEntry } from '../../../contract/usage-record.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import { existingOrg } from './orgs.js';
import * as rules from './rules.js';

const DAY_MS = 86_400_000;
const MAX_DAILY_ROWS = 366;
/** The longest series the console asks for. */
const MAX_SERIES_DAYS = 90;
const CSV_COLUMNS = ['time', 'org', 'key_id', 'model', 'request_id', 'tokens'] as const;
/** How far the clocks of the gateway hosts and Redis may disagree without a chart losing entries. */
const CLOCK_SKEW_MS = 3_600_000;

type ExportFormat = 'jsonl' | 'csv';
const DEFAULT_TOP_KEYS = 8;

/** A chart's range: the last `days` UTC days, or the UTC days of `since`..`until` (rules.timeBound). */
export interface SeriesQuery {
  readonly days?: unknown;
  readonly since?: unknown;
  readonly until?: unknown;
  readonly top?: unknown;
}

/** The UTC days a series covers; at most MAX_DAILY_ROWS, never past today. */
function seriesDays(query: SeriesQuery, now: number): string[] {
  if (query.since !== undefined || query.until !== undefined) {
    const dayOf = (value: unknown, field: 'since' | 'until'): number => Date.parse(utcDay(rules.timeBound(value, field, field)));
    const since = dayOf(query.since, 'since');
    const until = Math.min(query.until === undefined ? Date.parse(utcDay(now)) : dayOf(query.until, 'until'), Date.parse(utcDay(now)));
    if (since > until) throw invalid('since', 'must not be after until (nor after today)');
    if ((until - since) / DAY_MS + 1 > MAX_DAILY_ROWS) throw invalid('since', `the range is at most ${MAX_DAILY_ROWS} days`);
    return daysBetween(since, until, MAX_DAILY_ROWS);
  }
  const count = query.days ?? 14;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_SERIES_DAYS)
    throw invalid('days', `must be an integer from 1 to ${MAX_SERIES_DAYS}`);
  return daysBetween(now - (count - 1) * DAY_MS, now, count);
}

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
function daysBetween(since: number, until: number, max = MAX_DAILY_ROWS): string[] {
  const days: string[] = [];
  for (let t = Date.parse(utcDay(until)); t >= since - DAY_MS + 1 && days.length < max; t -= DAY_MS) days.push(utcDay(t));
  return days.reverse();
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One usage entry as an export line. */
function exportLine(entry: UsageEntry, format: ExportFormat): string {
  const row = {
    time: new Date(entry.time).toISOString(),
    org: entry.org,
    key_id: entry.keyId,
    model: entry.model,
    request_id: entry.requestId,
    tokens: entry.tokens,
  };
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
        const model = models[entry.model] ?? { requests: 0, tokens: 0 };
        models[entry.model] = model;
        model.requests += 1;
        model.tokens += entry.tokens;
      }
      const end = until ?? deps.now();
      const daily = await deps.reports.readDaily(org, daysBetween(since ?? end - 30 * DAY_MS, end));
      const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
      return {
        org,
        since: iso(since),
        until: iso(until),
        requests,
        tokens,
        models,
        daily: daily.map(({ day, counters }) => ({ day, requests: counters.requests, tokens: counters.tokens })),
      };
    },

    /**
     * Per UTC day over a range (the last `days` days, or `since`..`until` dates), zeros filled
     * in: the organization's totals, per model (from the daily counters), and the `top` keys by
     * tokens with their names, the rest summed as "others" (so 50 keys stay readable).
     */
    async usageSeries(orgInput: unknown, query: SeriesQuery) {
      const org = await existingOrg(deps, orgInput);
      const days = seriesDays(query, deps.now());
      const top = query.top === undefined ? DEFAULT_TOP_KEYS : query.top;
      if (typeof top !== 'number' || !Number.isInteger(top) || top < 1 || top > 50) throw invalid('top', 'must be an integer from 1 to 50');
      const counters = new Map((await deps.reports.readDaily(org.id, days)).map((row) => [row.day, row.counters]));
      const perKey = new Map<string, Map<string, DayPoint>>();
      const since = Date.parse(days[0]!);
      const until = Date.parse(days.at(-1)!) + DAY_MS - 1;
      // The console asks for this on every view: scan only the period, not the whole history.
      for await (const entry of deps.reports.readUsage({ org: org.id, since, until, appendedFrom: since - CLOCK_SKEW_MS })) {
        const series = perKey.get(entry.keyId) ?? perKey.set(entry.keyId, new Map()).get(entry.keyId)!;
        const day = utcDay(entry.time);
        const point = series.get(day) ?? { day, requests: 0, tokens: 0 };
        series.set(day, { day, requests: point.requests + 1, tokens: point.tokens + entry.tokens });
      }
      const fill = (lookup: (day: string) => Partial<DayPoint> | undefined): DayPoint[] =>
        days.map((day) => ({ day, requests: lookup(day)?.requests ?? 0, tokens: lookup(day)?.tokens ?? 0 }));
      const names = new Map((await deps.orgs.listKeys(org.id)).map((key) => [key.id, key.name]));
      const total = (series: Map<string, DayPoint>) => [...series.values()].reduce((sum, p) => sum + p.tokens, 0);
      const ranked = [...perKey.entries()].sort(([a, x], [b, y]) => total(y) - total(x) || a.localeCompare(b));
      const rest = ranked.slice(top);
      const models = new Set<string>();
      for (const row of counters.values()) for (const model of Object.keys(row.models)) models.add(model);
      return {
        org: org.id,
        since: days[0]!,
        until: days.at(-1)!,
        days: fill((day) => counters.get(day)),
        keys: ranked
          .slice(0, top)
          .map(([keyId, series]) => ({ keyId, name: names.get(keyId) ?? '', days: fill((day) => series.get(day)) })),
        others:
          rest.length === 0
            ? null
            : {
                keys: rest.length,
                days: fill((day) =>
                  rest.reduce(
                    (sum, [, series]) => ({
                      requests: sum.requests + (series.get(day)?.requests ?? 0),
                      tokens: sum.tokens + (series.get(day)?.tokens ?? 0),
                    }),
                    { requests: 0, tokens: 0 },
                  ),
                ),
              },
        models: [...models].sort().map((model) => ({
          model,
          days: fill((day) => ({
            requests: counters.get(day)?.models[model]?.requests ?? 0,
            tokens: counters.get(day)?.models[model]?.tokens ?? 0,
          })),
        })),
      };
    },

    /** Every organization's totals per UTC day over a range, from the daily counters (no stream scan). */
    async usageAcrossOrgs(query: SeriesQuery) {
      const days = seriesDays(query, deps.now());
      const orgs = await deps.orgs.listOrgs();
      const rows = await Promise.all(orgs.map(async (org) => ({ org, daily: await deps.reports.readDaily(org.id, days) })));
      const perDay = new Map<string, DayPoint>();
      const totals = rows.map(({ org, daily }) => {
        let requests = 0;
        let tokens = 0;
        for (const { day, counters } of daily) {
          requests += counters.requests;
          tokens += counters.tokens;
          const point = perDay.get(day) ?? { day, requests: 0, tokens: 0 };
          perDay.set(day, { day, requests: point.requests + counters.requests, tokens: point.tokens + counters.tokens });
        }
        return { org: org.id, name: org.name, disabled: org.disabled === true, requests, tokens };
      });
      return {
        since: days[0]!,
        until: days.at(-1)!,
        days: days.map((day) => perDay.get(day) ?? { day, requests: 0, tokens: 0 }),
        orgs: totals.sort((a, b) => b.tokens - a.tokens || a.org.localeCompare(b.org)),
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
      await deps.audit.record({
        ...who,
        action: 'usage.export',
        target: org === undefined ? 'usage' : `org:${org}`,
        detail: { format, ...isoRange(range) },
      });
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
