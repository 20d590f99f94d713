/**
 * Which access-log entries are billable usage, pure. Envoy logs every request; a 200 from
 * POST /v1/embeddings is one request to record, carrying the identity authz added upstream and
 * the embedder's `x-usage-total-tokens`. Only identifiers and counts are read, never text.
 */
import type { HTTPAccessLogEntry__Output } from '../../generated/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import { IDENTITY_HEADERS, USAGE_TOKENS_HEADER } from '../headers.js';
const BILLED_PATH = '/v1/embeddings';
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._\/-]{0,127}$/;

/** What one successful request used, as recorded. */
export interface UsageRecord {
  readonly org: string;
  readonly keyId: string;
  readonly model: string;
  readonly requestId: string;
  readonly tokens: number;
  readonly time: number;
}

/** `not_billable`: another path/method/status; `incomplete`: a 200 missing identity or tokens. */
export type UsageReading = { kind: 'usage'; usage: UsageRecord } | { kind: 'not_billable' } | { kind: 'incomplete' };

/** Reads one HTTP access-log entry; `now` stands in when Envoy sent no start time. */
export function readUsage(entry: HTTPAccessLogEntry__Output, now: number): UsageReading {
  const request = entry.request;
  const response = entry.response;
  if (entry.common_properties?.intermediate_log_entry) return { kind: 'not_billable' };
  if (!request || request.request_method !== 'POST' || request.path.split('?', 1)[0] !== BILLED_PATH) return { kind: 'not_billable' };
  if (response?.response_code?.value !== 200) return { kind: 'not_billable' };
  const headers = request.request_headers ?? {};
  const org = headers[IDENTITY_HEADERS.org];
  const keyId = headers[IDENTITY_HEADERS.key];
  const model = headers[IDENTITY_HEADERS.model];
  const tokensText = response.response_headers?.[USAGE_TOKENS_HEADER];
  if (!isIdentifier(org) || !isIdentifier(keyId) || !isIdentifier(model) || !/^\d{1,12}$/.test(tokensText ?? '')) {
    return { kind: 'incomplete' };
  }
  const requestId = (headers['x-request-id'] || request.request_id || '').slice(0, 200);
  return { kind: 'usage', usage: { org, keyId, model, requestId, tokens: Number(tokensText), time: startTime(entry) ?? now } };
}

function isIdentifier(value: string | undefined): value is string {
  return value !== undefined && IDENTIFIER.test(value) && !value.includes(':');
}

function startTime(entry: HTTPAccessLogEntry__Output): number | null {
  const start = entry.common_properties?.start_time;
  if (!start) return null;
  const ms = Number(start.seconds) * 1000 + Math.floor(start.nanos / 1e6);
  return Number.isFinite(ms) && ms > 0 ? ms : null;
}
