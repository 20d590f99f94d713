/**
 * The one problem catalogue of the gateway. Every error a client can see (embedder, authz,
 * Envoy's local replies) carries a `code` from this table with its fixed status and title;
 * the table itself lives in the OpenAPI document (`x-problem-codes`) so the contract and the
 * code cannot drift.
 */
import type { components } from './generated/schema.js';
import { openapiDocument } from './document.js';

export type ProblemCode = components['schemas']['ProblemCode'];
export type Problem = components['schemas']['Problem'];
type ErrorType = Problem['error']['type'];

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

interface CatalogueEntry {
  readonly status: number;
  readonly title: string;
}

const rows = openapiDocument['x-problem-codes'] as Array<{ code: ProblemCode } & CatalogueEntry>;

/** code → { status, title }, as the OpenAPI document defines it. */
export const catalogue: ReadonlyMap<ProblemCode, CatalogueEntry> = new Map(
  rows.map((row) => [row.code, Object.freeze({ status: row.status, title: row.title })]),
);

/**
 * OpenAI's `error.type` per HTTP status, chosen so each client classifies the error by its
 * own rule: the OpenAI SDKs go by status alone, but litellm reads the body first and turns any
 * `invalid_request_error` into BadRequestError whatever the status, so 401, 403 and 404 must
 * carry their own types (values OpenAI's API uses). Statuses not listed are 5xx: `server_error`.
 */
const ERROR_TYPE_BY_STATUS: Readonly<Record<number, ErrorType>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
});

/** `error.type` for a status: the table above, `server_error` for the rest. */
function errorType(status: number): ErrorType {
  return ERROR_TYPE_BY_STATUS[status] ?? 'server_error';
}

// "input[3]: must not be empty" → "input[3]"; "x-request-id: …" → "x-request-id".
const FIELD_PREFIX = /^([A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)*): /;

/**
 * The field an `invalid_body` detail names. Every such detail is "<field>: <message>" (the
 * catalogue's one convention), so `error.param` is read from it rather than passed beside it:
 * the two cannot disagree, and every producer (ajv messages, body parser, Envoy) gets it.
 */
function problemParam(code: ProblemCode, detail: string | undefined): string | null {
  if (code !== 'invalid_body' || detail === undefined) return null;
  return FIELD_PREFIX.exec(detail)?.[1] ?? null;
}

/**
 * Builds the RFC 9457 body for `code`; `detail` must never contain request text. The `error`
 * extension member repeats code and message in OpenAI's envelope: the official SDKs read only
 * that member, and without it their errors say "401 status code (no body)" and have no code.
 */
export function problem(code: ProblemCode, detail?: string): Problem {
  const entry = catalogue.get(code);
  if (!entry) throw new Error(`problem code not in the catalogue: ${code}`);
  const error: Problem['error'] = {
    message: detail ?? entry.title,
    type: errorType(entry.status),
    param: problemParam(code, detail),
    code,
  };
  const body: Problem = { type: 'about:blank', status: entry.status, title: entry.title, code, error };
  if (detail !== undefined) body.detail = detail;
  return body;
}

/**
 * A refusal raised on purpose: a catalogue code, a detail (never request text), optional
 * headers such as `retry-after`. It lives beside the catalogue, not in a service's HTTP layer,
 * so any layer may refuse with a code while only the edge renders the body.
 */
export class ProblemError<Code extends string = ProblemCode> extends Error {
  constructor(
    readonly code: Code,
    readonly detail?: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail ?? code);
    this.name = 'ProblemError';
  }
}
