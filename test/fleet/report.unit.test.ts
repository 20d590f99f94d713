/**
 * make fleet's report names who failed a request: Envoy's response details from its access log
 * beside the client's status and problem code, so an ext_authz timeout (ext_authz_error) reads
 * apart from authz's own refusal (ext_authz_denied) in a failing run's table.
 */
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../scripts/fleet/load.js';
import { envoyAnswers, summarise } from '../../scripts/fleet/report.js';

const outcome = (id: string, status: number, error?: string): Outcome => ({
  id,
  org: 'org-a',
  status,
  tokens: status === 200 ? 3 : 0,
  sentAt: 0,
  at: 1,
  bogus: false,
  rerouted: false,
  ...(status === 503 ? { retryAfter: '1' } : {}),
  ...(error ? { error } : {}),
});

describe('the fleet report', () => {
  const logs = [
    [
      '[2026-11-26 13:08:48.000][1][info][main] starting',
      JSON.stringify({ request_id: 's0-1', status: 503, details: 'ext_authz_error', duration_ms: 2003 }),
      JSON.stringify({ request_id: 's0-2', status: 200, details: 'via_upstream', duration_ms: 9 }),
      '{"truncated',
    ].join('\n'),
    JSON.stringify({ request_id: 's0-3', status: 503, details: 'ext_authz_denied', duration_ms: 501 }),
  ];

  it("reads each request's details and time from every gateway's log, skipping lines that are not JSON", () => {
    const answers = envoyAnswers(logs);
    expect(Object.fromEntries(answers)).toEqual({
      's0-1': 'ext_authz_error 2003 ms',
      's0-2': 'via_upstream 9 ms',
      's0-3': 'ext_authz_denied 501 ms',
    });
  });

  it("counts failures by status, code and Envoy's details (without them where the log has no line)", () => {
    const outcomes = [
      outcome('s0-1', 503, 'authorization_unavailable'),
      outcome('s0-2', 200),
      outcome('s0-3', 503, 'authorization_unavailable'),
      outcome('s0-4', 503, 'authorization_unavailable'),
    ];
    const s = summarise('authz kill -9', outcomes, new Map([['s0-2', 1]]), 1000, undefined, envoyAnswers(logs));
    expect(s.failed_statuses).toEqual({
      '503 authorization_unavailable (ext_authz_error)': 1,
      '503 authorization_unavailable (ext_authz_denied)': 1,
      '503 authorization_unavailable': 1,
    });
    expect([s.failed, s.ok, s.usage_recorded, s.failed_not_503_retry_after]).toEqual([3, 1, 1, 0]);
  });
});
