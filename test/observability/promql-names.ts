/**
 * The metric names a PromQL expression reads, for checking dashboard and alert queries against
 * the series a live stack exposes. A small lexer, enough for our own queries: it drops strings,
 * label matchers, grouping clauses and ranges, then keeps identifiers that are not functions,
 * keywords or aggregations.
 */
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/** Metric names in `expr` (sorted, unique). */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const rest = stripped.slice(match.index! + match[0].length);
    if (/^\s*\(/.test(rest) || KEYWORDS.has(match[0].toLowerCase())) continue;
    // Exponents of numbers (1e3) are not names.
    if (match.index! > 0 && /[0-9.]/.test(stripped[match.index! - 1]!)) continue;
    names.add(match[0]);
  }
  return [...names].sort();
}

/** Sample names in a Prometheus text exposition (histograms give _bucket, _sum and _count). */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]/.exec(line);
    if (match) names.add(match[1]!);
  }
  return names;
}
