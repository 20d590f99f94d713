/**
 * Export file names that say what they hold: what (usage, audit), whose (an organization or
 * all), which period (UTC dates) and when it was taken, for example
 * `usage-clinic-north-2031-03-01-to-2031-03-31.csv` or `audit-all-start-to-2031-03-04T050607Z.jsonl`.
 */

/** The file name for an export of `kind` with the request's filters. */
export function exportFileName(kind: 'usage' | 'audit', query: Readonly<Record<string, unknown>>, format: string, now: number): string {
  const whose = typeof query.org === 'string' ? query.org : 'all';
  const date = (value: unknown, fallback: string): string =>
    typeof value === 'string' ? value.replace(/:/g, '').replace(/\.\d{3}/, '') : fallback;
  const taken = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const name = `${kind}-${whose}-${date(query.since, 'start')}-to-${date(query.until, taken)}.${format}`;
  // Header-safe: ids and ISO dates only, anything else becomes '_'.
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}
