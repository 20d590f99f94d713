/**
 * The problem bodies of the replies Envoy makes itself (404, 405, 413, 503 …), built from the
 * one catalogue in openapi/problems.ts so Envoy's replies cannot be told apart from the
 * services' by their shape. The details are fixed sentences: Envoy never echoes request text.
 */
import { REQUEST_ID_HEADER, REQUEST_ID_RULE_TEXT } from '../contract/request-id.js';
import { problem, type ProblemCode } from '../openapi/problems.js';
import { NEW_KEY_REFUSED_STATUS } from './new-keys.js';

interface LocalReply {
  readonly code: ProblemCode;
  readonly detail: string;
}

/** Template placeholder → the problem Envoy answers with. */
export const localReplies: Readonly<Record<string, LocalReply>> = Object.freeze({
  PROBLEM_NOT_FOUND: { code: 'not_found', detail: 'No resource is served at this path.' },
  PROBLEM_METHOD_NOT_ALLOWED: {
    code: 'method_not_allowed',
    detail: 'This method is not supported on this path; the allow header lists the supported methods.',
  },
  PROBLEM_PAYLOAD_TOO_LARGE: { code: 'payload_too_large', detail: 'The request body is larger than 1 MiB.' },
  PROBLEM_MALFORMED_REQUEST: { code: 'invalid_body', detail: 'The HTTP request could not be read.' },
  PROBLEM_HEADERS_TOO_LARGE: { code: 'invalid_body', detail: 'headers: at most 64 request headers and 32 KiB of them are accepted.' },
  PROBLEM_INVALID_REQUEST_ID: { code: 'invalid_body', detail: `${REQUEST_ID_HEADER}: ${REQUEST_ID_RULE_TEXT}` },
  PROBLEM_UPSTREAM_UNAVAILABLE: {
    code: 'upstream_unavailable',
    detail: 'The embedding service cannot be reached; retry after the retry-after seconds.',
  },
  PROBLEM_AUTHORIZATION_UNAVAILABLE: {
    code: 'authorization_unavailable',
    detail: 'The authorization service cannot be reached; retry after the retry-after seconds.',
  },
  PROBLEM_SOURCE_RATE_LIMITED: {
    code: 'rate_limit_exceeded',
    detail: 'Too many requests from this network address; retry after the retry-after seconds.',
  },
  PROBLEM_NEW_KEY_BUDGET: {
    code: 'authorization_unavailable',
    detail: 'Too many requests with API keys this gateway has not yet seen accepted; retry after the retry-after seconds.',
  },
  PROBLEM_INTERNAL_ERROR: { code: 'internal_error', detail: 'The gateway failed unexpectedly.' },
});

/** The JSON text of the problem body for one placeholder. */
export function localReplyBody(placeholder: string): string {
  const reply = localReplies[placeholder];
  if (!reply) throw new Error(`no local reply for ${placeholder}`);
  return JSON.stringify(problem(reply.code, reply.detail));
}

/** The project's Envoy (every reply it makes itself), or Istio's ingress gateway (istio-edge.ts). */
export type MapperScope = 'gateway' | 'istio';

/** The status the per-source limit (ENVOY_PER_SOURCE_RPS, render.ts) refuses with; its mapper makes it 429. */
export const PER_SOURCE_REFUSED_STATUS = 508;
/** The header the request-header policy (the template's Lua filter) marks its refusals with. */
const LOCAL_REPLY_MARKER = 'x-gateway-local-reply';
const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

const status = (code: number) => ({
  status_code_filter: { comparison: { op: 'EQ', value: { default_value: code, runtime_key: 'ctg.na' } } },
});
const anyStatus = (...codes: number[]) => ({ or_filter: { filters: codes.map(status) } });
const both = (...filters: object[]) => ({ and_filter: { filters } });
const marked = (reason: string) => ({ header_filter: { header: { name: LOCAL_REPLY_MARKER, string_match: { exact: reason } } } });
const flagged = (flag: string) => ({ response_flag_filter: { flags: [flag] } });

interface MapperRule {
  readonly placeholder: string;
  readonly filter: object;
  /** The status the client sees, when not the one matched. */
  readonly status?: number;
  /** retry-after: the configured seconds, or a fixed value. */
  readonly retryAfter?: 'configured' | string;
  /** A fresh x-request-id where the request has none (it was dropped, or never parsed). */
  readonly freshRequestId?: boolean;
  /** Istio's gateway has this mapper too, with this filter when it differs. */
  readonly istio?: { readonly filter?: object };
}

/**
 * Every reply Envoy makes itself gets the catalogue's problem body. Mappers are keyed on statuses
 * authz never denies with (its 401/403/429 denials pass through untouched), except the 503 + UAEX
 * pair, which is ext_authz's own error reply. The first that matches applies.
 */
const MAPPER_RULES: readonly MapperRule[] = [
  // The request-id rule (the Lua filter) refused this request; its id was dropped.
  { placeholder: 'PROBLEM_INVALID_REQUEST_ID', filter: both(status(400), marked('invalid-request-id')), freshRequestId: true },
  { placeholder: 'PROBLEM_HEADERS_TOO_LARGE', filter: both(status(400), marked('headers-too-large')) },
  // ext_authz's own reply when authz cannot answer in time (status_on_error 503).
  { placeholder: 'PROBLEM_AUTHORIZATION_UNAVAILABLE', filter: both(status(503), flagged('UAEX')), retryAfter: 'configured', istio: {} },
  // The per-source limit refused it before ext_authz, with a status only it uses, so authz's
  // 429s keep their bodies.
  { placeholder: 'PROBLEM_SOURCE_RATE_LIMITED', filter: status(PER_SOURCE_REFUSED_STATUS), status: 429, retryAfter: '1' },
  // The new-key budget refused it before ext_authz: authz was not asked, as when it cannot answer.
  {
    placeholder: 'PROBLEM_NEW_KEY_BUDGET',
    filter: status(NEW_KEY_REFUSED_STATUS),
    status: 503,
    retryAfter: 'configured',
    istio: {},
  },
  // On Istio's gateway, only the 404 of no route (NR): other hosts' local 404s are not ours.
  { placeholder: 'PROBLEM_NOT_FOUND', filter: status(404), istio: { filter: both(status(404), flagged('NR')) } },
  { placeholder: 'PROBLEM_METHOD_NOT_ALLOWED', filter: status(405) },
  { placeholder: 'PROBLEM_PAYLOAD_TOO_LARGE', filter: status(413) },
  // Protocol-level rejections (bad framing, headers too large or too many, request timeout, an
  // upgrade or transfer coding Envoy will not take) have no catalogue code of their own: the
  // client sent something the gateway cannot read. Such a request has no request id yet.
  { placeholder: 'PROBLEM_MALFORMED_REQUEST', filter: anyStatus(400, 408, 426, 431, 501), status: 400, freshRequestId: true },
  // Embedder unreachable, reset, or too slow: the router's own 502/503/504.
  { placeholder: 'PROBLEM_UPSTREAM_UNAVAILABLE', filter: anyStatus(502, 503, 504), status: 503, retryAfter: 'configured' },
  { placeholder: 'PROBLEM_INTERNAL_ERROR', filter: status(500) },
];

/**
 * The local reply mappers for `scope`, in the order Envoy tries them: the one owner of which
 * reply gets which body, status and headers, for the template (envoy.yaml.tmpl) and Istio mode.
 */
export function localReplyMappers(scope: MapperScope, retryAfterSeconds: number): object[] {
  const rules = scope === 'istio' ? MAPPER_RULES.filter((rule) => rule.istio) : MAPPER_RULES;
  return rules.map((rule) => {
    const headers: object[] = [];
    if (rule.freshRequestId) headers.push({ header: { key: 'x-request-id', value: '%UNIQUE_ID%' }, append_action: 'ADD_IF_ABSENT' });
    if (rule.retryAfter) {
      const value = rule.retryAfter === 'configured' ? String(retryAfterSeconds) : rule.retryAfter;
      headers.push({ header: { key: 'retry-after', value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });
    }
    // Bodies are Envoy format strings, where % is special; the catalogue's sentences have none.
    const body = localReplyBody(rule.placeholder);
    if (body.includes('%')) throw new Error(`local reply ${rule.placeholder} must not contain %`);
    return {
      filter: (scope === 'istio' && rule.istio?.filter) || rule.filter,
      ...(rule.status ? { status_code: rule.status } : {}),
      ...(headers.length > 0 ? { headers_to_add: headers } : {}),
      body_format_override: { text_format_source: { inline_string: body }, content_type: PROBLEM_JSON },
    };
  });
}
