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
 * Builds the RFC 9457 body for `code`; `detail` must never contain request text. The `error`
 * extension member repeats code and message in OpenAI's envelope: the official SDKs read only
 * that member, and without it their errors say "401 status code (no body)" and have no code.
 */
export function problem(code: ProblemCode, detail?: string): Problem {
  const entry = catalogue.get(code);
  if (!entry) throw new Error(`problem code not in the catalogue: ${code}`);
  const error: Problem['error'] = {
    message: detail ?? entry.title,
    type: entry.status >= 500 ? 'server_error' : 'invalid_request_error',
    param: null,
    code,
  };
  const body: Problem = { type: 'about:blank', status: entry.status, title: entry.title, code, error };
  if (detail !== undefined) body.detail = detail;
  return body;
}
