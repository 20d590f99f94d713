/**
 * Export file names that say what they hold: what (usage, billing, audit), whose (an
 * organization, the audit filters, or all), which period (UTC) and when it was taken, for
 * example `usage-clinic-north-2031-03-01-to-2031-03-31.csv`,
 * `billing-all-month-2031-01-01-to-2031-03-31.csv` or
 * `audit-action-key.-start-to-2031-03-04T050607Z.jsonl`.
 */

const AUDIT_FILTERS = ['action', 'actor', 'target'] as const;

// An audit export is whose its filters say; a usage or billing export is one organization's or all.
function whoseOf(kind: string, query: Readonly<Record<string, unknown>>): string {
  if (kind === 'audit') {
    const parts = AUDIT_FILTERS.filter((f) => typeof query[f] === 'string' && query[f] !== '').map((f) => `${f}-${String(query[f])}`);
    return parts.length > 0 ? parts.join('-') : 'all';
  }
  const whose = typeof query.org === 'string' && query.org !== '' ? query.org : 'all';
  return kind === 'billing' ? `${whose}-${typeof query.period === 'string' ? query.period : 'month'}` : whose;
}

/** The file name for an export of `kind` with the request's filters. */
export function exportFileName(
  kind: 'usage' | 'audit' | 'billing',
  query: Readonly<Record<string, unknown>>,
  format: string,
  now: number,
): string {
  const whose = whoseOf(kind, query);
  const date = (value: unknown, fallback: string): string =>
    typeof value === 'string' && value !== '' ? value.replace(/:/g, '').replace(/\.\d{3}/, '') : fallback;
  const taken = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const name = `${kind}-${whose}-${date(query.since, 'start')}-to-${date(query.until, taken)}.${format}`;
  // Header-safe: ids and ISO dates only, anything else becomes '_'.
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}
