/**
 * What a scenario's outcomes say: requests, client-visible failures, the fail-closed window,
 * usage returned against usage recorded; the table `make fleet` prints and fleet.json.
 */
import type { Outcome } from './load.js';
import type { FaultFacts } from './scenarios.js';

/** Failed answers per organization from `faultAt` on. */
export function failuresByOrg(outcomes: readonly Outcome[], faultAt: number): Record<string, number> {
  const by: Record<string, number> = {};
  for (const o of outcomes) if (!o.bogus && o.at >= faultAt && o.status !== 200) by[o.org] = (by[o.org] ?? 0) + 1;
  return by;
}

/** One scenario's figures, as fleet.json holds them (scripts/fleet/README.md lists the fields). */
export interface ScenarioResult {
  readonly name: string;
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  readonly usage_returned: number;
  readonly usage_recorded: number;
  /** First to last client-visible failure, ms (0 without failures). */
  readonly window_ms: number;
  /** Failures by status and problem code (0 = no response, with the client error). */
  readonly failed_statuses: Readonly<Record<string, number>>;
  /** Failures that were not a 503 with retry-after (fail closed means there are none). */
  readonly failed_not_503_retry_after: number;
  /** Requests with a bogus key that got a 200 (must be 0). */
  readonly open_door: number;
  /** Requests the client sent to the other gateway after a refused connection. */
  readonly rerouted: number;
  readonly duration_ms: number;
  /** Redis scenarios: from the kill until a Sentinel named another primary. */
  readonly promotion_ms?: number;
  /**
   * Redis scenarios: the fail-closed window, from the first failed answer after the kill to the
   * first 200 of a request sent after it (0 without failures).
   */
  readonly fail_closed_ms?: number;
  /** Redis scenarios: the 1-minute load average when the primary was killed. */
  readonly load_average?: number;
  /**
   * Redis Cluster scenario: the organizations on the killed primary (fail_closed_ms is theirs
   * only), the host killed and the replica promoted, and the failed answers after the kill per organization.
   */
  readonly fault_orgs?: readonly string[];
  readonly killed?: string;
  readonly promoted?: string;
  readonly failed_by_org_after_fault?: Readonly<Record<string, number>>;
  /** Redis Cluster scenario: the fail-closed window of each organization that had a failure after the kill. */
  readonly fail_closed_ms_by_org?: Readonly<Record<string, number>>;
}

/** The fail-closed window after `faultAt` (see ScenarioResult.fail_closed_ms). */
export function failClosedMs(outcomes: readonly Outcome[], faultAt: number, orgs?: readonly string[]): number {
  const real = outcomes.filter((o) => !o.bogus && o.at >= faultAt && (!orgs || orgs.includes(o.org))).sort((a, b) => a.at - b.at);
  const firstFailure = real.find((o) => o.status !== 200);
  if (!firstFailure) return 0;
  const served = real.find((o) => o.status === 200 && o.sentAt >= firstFailure.at);
  // Never served again before the load stopped: the window is as long as the run let us see.
  const end = served?.at ?? Math.max(...real.map((o) => o.at));
  return end - firstFailure.at;
}

/**
 * Each request id's answer as Envoy logged it (its access log's JSON lines): the response code
 * details and the time taken, as `ext_authz_error 2001 ms`. Tells an ext_authz timeout from
 * authz's own refusal (`ext_authz_denied`) when a scenario fails.
 */
export function envoyAnswers(logs: readonly string[]): Map<string, string> {
  const answers = new Map<string, string>();
  for (const line of logs.join('\n').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { request_id?: string; details?: string; duration_ms?: number };
      if (entry.request_id) answers.set(entry.request_id, `${entry.details ?? '?'} ${entry.duration_ms ?? '?'} ms`);
    } catch {
      // Not an access-log line.
    }
  }
  return answers;
}

/**
 * Summarises one scenario; `recorded` holds how often each request id was recorded, `answers`
 * Envoy's account of each (envoyAnswers), shown beside each failure's status and code.
 */
export function summarise(
  name: string,
  outcomes: readonly Outcome[],
  recorded: ReadonlyMap<string, number>,
  durationMs: number,
  facts?: FaultFacts,
  answers: ReadonlyMap<string, string> = new Map(),
): ScenarioResult {
  const real = outcomes.filter((o) => !o.bogus);
  const ok = real.filter((o) => o.status === 200);
  const failed = real.filter((o) => o.status !== 200);
  const statuses: Record<string, number> = {};
  for (const f of failed) {
    // Envoy's details without the time: one row per kind of failure.
    const detail = answers.get(f.id)?.split(' ')[0];
    const kind = `${f.status} ${f.error ?? ''}`.trim() + (detail ? ` (${detail})` : '');
    statuses[kind] = (statuses[kind] ?? 0) + 1;
  }
  const times = failed.map((f) => f.at);
  return {
    name,
    requests: real.length,
    ok: ok.length,
    failed: failed.length,
    usage_returned: ok.length,
    usage_recorded: ok.reduce((n, o) => n + (recorded.get(o.id) ?? 0), 0),
    window_ms: times.length ? Math.max(...times) - Math.min(...times) : 0,
    failed_statuses: statuses,
    failed_not_503_retry_after: failed.filter((f) => !(f.status === 503 && f.retryAfter !== undefined)).length,
    open_door: outcomes.filter((o) => o.bogus && o.status === 200).length,
    rerouted: real.filter((o) => o.rerouted).length,
    duration_ms: durationMs,
    ...(facts
      ? {
          promotion_ms: facts.promotionMs,
          fail_closed_ms: failClosedMs(outcomes, facts.faultAt, facts.orgs),
          load_average: Math.round(facts.loadAverage * 100) / 100,
          ...(facts.orgs
            ? {
                fault_orgs: facts.orgs,
                failed_by_org_after_fault: failuresByOrg(outcomes, facts.faultAt),
                fail_closed_ms_by_org: Object.fromEntries(
                  Object.keys(failuresByOrg(outcomes, facts.faultAt)).map((org) => [org, failClosedMs(outcomes, facts.faultAt, [org])]),
                ),
              }
            : {}),
          ...(facts.killed ? { killed: facts.killed, promoted: facts.promoted ?? '' } : {}),
        }
      : {}),
  };
}

/** The whole run as fleet.json. */
export interface FleetReport {
  readonly scenarios: readonly ScenarioResult[];
  readonly failed_total: number;
  readonly usage_lost: number;
  readonly rate_limit_admitted: number;
  readonly rate_limit_limit: number;
  readonly rate_limit_requests: number;
  readonly rate_limit_elapsed_ms: number;
  /** Every answer of the rate-limit burst by status and problem code. */
  readonly rate_limit_statuses: Readonly<Record<string, number>>;
  readonly open_door_total: number;
  readonly quick: boolean;
  /** Run with --starve: the Redis nodes and Sentinels on one busy core under a CPU quota. */
  readonly starve: boolean;
  readonly load: { readonly rate_per_s: number; readonly max_in_flight: number; readonly organizations: number };
  readonly measured_at: string;
  /** How the fleet's Redis ran (`--redis`); with a cluster, its placement and exactness per organization (main.ts). */
  readonly redis?: 'sentinel' | 'cluster';
  readonly cluster?: {
    readonly placement_at_start: Readonly<Record<string, string>>;
    /** The primary of each organization's API key record (`<prefix>key:<id>`: the key id's slot, not the organization's). */
    readonly key_placement_at_start: Readonly<Record<string, string>>;
    readonly orgs: ReadonlyArray<import('./cluster.js').OrgUsage>;
  };
}

/** Totals over the scenarios. */
export function report(
  scenarios: readonly ScenarioResult[],
  rate: { admitted: number; limit: number; requests: number; elapsedMs: number; statuses: Record<string, number> },
  rest: Pick<FleetReport, 'quick' | 'starve' | 'load'>,
): FleetReport {
  return {
    scenarios,
    failed_total: scenarios.reduce((n, s) => n + s.failed, 0),
    usage_lost: scenarios.reduce((n, s) => n + Math.max(0, s.usage_returned - s.usage_recorded), 0),
    rate_limit_admitted: rate.admitted,
    rate_limit_limit: rate.limit,
    rate_limit_requests: rate.requests,
    rate_limit_elapsed_ms: rate.elapsedMs,
    rate_limit_statuses: rate.statuses,
    open_door_total: scenarios.reduce((n, s) => n + s.open_door, 0),
    ...rest,
    measured_at: new Date().toISOString(),
  };
}

/** The table `make fleet` prints. */
export function table(r: FleetReport): string {
  const head = [
    'scenario',
    'requests',
    'ok',
    'failed',
    'window ms',
    'usage returned',
    'usage recorded',
    'rerouted',
    'promotion ms',
    'fail-closed ms',
    'load',
    'failures (status: n)',
  ];
  const rows = r.scenarios.map((s) =>
    [
      s.name,
      s.requests,
      s.ok,
      s.failed,
      s.window_ms,
      s.usage_returned,
      s.usage_recorded,
      s.rerouted,
      s.promotion_ms ?? '-',
      s.fail_closed_ms ?? '-',
      s.load_average ?? '-',
      Object.entries(s.failed_statuses)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') || '-',
    ].map(String),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `failed_total ${r.failed_total}   usage_lost ${r.usage_lost}   open_door ${r.open_door_total}   ` +
      `rate limit: ${r.rate_limit_admitted} admitted of ${r.rate_limit_requests} at rpm ${r.rate_limit_limit} (${r.rate_limit_elapsed_ms} ms, both gateways; ` +
      `${Object.entries(r.rate_limit_statuses)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')})`,
  ].join('\n');
}
