/**
 * Billing exports a finance office can use: usage per UTC day or month, per organization and
 * key, with their names, per kind of usage (online requests and batch jobs apart, once the usage
 * record says which: until then every record is online) and model, sorted, as CSV or JSON.
 * Counted from the usage stream on each record's own time, as the usage API's per-key series
 * is, so an export's figures are the API's. Identifiers, names and counts only.
 */
import type { UsageEntry } from '../../../contract/usage-record.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import * as rules from './rules.js';

const CSV_COLUMNS = ['period', 'org', 'org_name', 'key_id', 'key_name', 'kind', 'model', 'requests', 'tokens'] as const;

export interface BillingRow {
  /** The UTC day (YYYY-MM-DD) or month (YYYY-MM). */
  readonly period: string;
  readonly org: string;
  readonly orgName: string;
  readonly keyId: string;
  readonly keyName: string;
  /** `online` or `batch` (what the usage record says; `online` when it says nothing). */
  readonly kind: string;
  readonly model: string;
  readonly requests: number;
  readonly tokens: number;
}

export interface BillingQuery {
  readonly org?: unknown;
  readonly since?: unknown;
  readonly until?: unknown;
  readonly period?: unknown;
}

// contract/usage-record.ts reads a record written before usage had kinds as online.
const kindOf = (entry: UsageEntry): string => entry.kind;

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

const compare = (a: BillingRow, b: BillingRow): number =>
  a.period.localeCompare(b.period) ||
  a.org.localeCompare(b.org) ||
  a.keyId.localeCompare(b.keyId) ||
  a.kind.localeCompare(b.kind) ||
  a.model.localeCompare(b.model);

/** Billing operations bound to `deps`. */
export function billingOperations(deps: AdminDeps) {
  async function billing(query: BillingQuery) {
    const period = query.period ?? 'month';
    if (period !== 'day' && period !== 'month') throw invalid('period', 'must be day or month');
    const org = query.org === undefined || query.org === '' ? undefined : rules.orgId(query.org);
    const range = rules.range(query.since, query.until);
    const sums = new Map<
      string,
      { org: string; keyId: string; kind: string; model: string; period: string; requests: number; tokens: number }
    >();
    for await (const entry of deps.reports.readUsage({ org, ...range })) {
      const at = new Date(entry.time).toISOString();
      const row = {
        org: entry.org,
        keyId: entry.keyId,
        kind: kindOf(entry),
        model: entry.model,
        period: period === 'day' ? at.slice(0, 10) : at.slice(0, 7),
      };
      const id = JSON.stringify([row.period, row.org, row.keyId, row.kind, row.model]);
      const sum = sums.get(id) ?? { ...row, requests: 0, tokens: 0 };
      sums.set(id, { ...sum, requests: sum.requests + 1, tokens: sum.tokens + entry.tokens });
    }
    const orgNames = new Map((await deps.orgs.listOrgs()).map((o) => [o.id, o.name]));
    const keyNames = new Map<string, string>();
    for (const id of new Set([...sums.values()].map((s) => s.org)))
      for (const key of await deps.orgs.listKeys(id)) keyNames.set(key.id, key.name);
    const rows: BillingRow[] = [...sums.values()]
      .map((s) => ({
        period: s.period,
        org: s.org,
        orgName: orgNames.get(s.org) ?? '',
        keyId: s.keyId,
        keyName: keyNames.get(s.keyId) ?? '',
        kind: s.kind,
        model: s.model,
        requests: s.requests,
        tokens: s.tokens,
      }))
      .sort(compare);
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    return { org: org ?? null, since: iso(range.since), until: iso(range.until), period, rows };
  }

  return {
    /** Usage per period, organization, key, kind and model over a range, with names, sorted. */
    billing,

    /** Validates and audits a billing export, then returns its body (CSV, or one JSON object). */
    async openBillingExport(query: BillingQuery & { format?: unknown }, who: Who): Promise<string> {
      const format = query.format ?? 'csv';
      if (format !== 'csv' && format !== 'json') throw invalid('format', 'must be csv or json');
      const report = await billing(query);
      await deps.audit.record({
        ...who,
        action: 'usage.billing',
        target: report.org === null ? 'usage' : `org:${report.org}`,
        detail: { format, period: report.period, since: report.since, until: report.until, rows: report.rows.length },
      });
      if (format === 'json') return `${JSON.stringify(report)}\n`;
      const line = (r: BillingRow) =>
        [r.period, r.org, r.orgName, r.keyId, r.keyName, r.kind, r.model, String(r.requests), String(r.tokens)].map(csvField).join(',');
      return `${[CSV_COLUMNS.join(','), ...report.rows.map(line)].join('\n')}\n`;
    },
  };
}
