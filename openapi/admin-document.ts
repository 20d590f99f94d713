/**
 * The admin API's OpenAPI document (openapi/admin.yaml), parsed once, and its problem
 * catalogue. The admin listener is its own service with its own table of codes; bodies have
 * the same RFC 9457 shape as the public API's, and a code both tables share must agree.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { components } from './generated/admin-schema.js';
import { catalogue as publicCatalogue } from './problems.js';

const adminDocumentPath = fileURLToPath(new URL('./admin.yaml', import.meta.url));

/** The parsed admin document, frozen. */
export const adminDocument: Readonly<Record<string, any>> = Object.freeze(parse(readFileSync(adminDocumentPath, 'utf8')));

export type AdminProblemCode = components['schemas']['AdminProblemCode'];
export type AdminProblem = components['schemas']['AdminProblem'];

interface Entry {
  readonly status: number;
  readonly title: string;
}

const rows = adminDocument['x-problem-codes'] as Array<{ code: AdminProblemCode } & Entry>;

/** code → { status, title } for the admin API. */
export const adminCatalogue: ReadonlyMap<AdminProblemCode, Entry> = new Map(
  rows.map((row) => {
    const shared = publicCatalogue.get(row.code as never);
    if (shared && (shared.status !== row.status || shared.title !== row.title)) {
      throw new Error(`admin.yaml: ${row.code} differs from the public catalogue`);
    }
    return [row.code, Object.freeze({ status: row.status, title: row.title })];
  }),
);

/** The admin API's RFC 9457 body for `code`, with the same OpenAI-style `error` member. */
export function adminProblem(code: AdminProblemCode, detail?: string): AdminProblem {
  const entry = adminCatalogue.get(code);
  if (!entry) throw new Error(`problem code not in the admin catalogue: ${code}`);
  const type = entry.status >= 500 ? 'server_error' : 'invalid_request_error';
  const body: AdminProblem = {
    type: 'about:blank',
    status: entry.status,
    title: entry.title,
    code,
    error: { message: detail ?? entry.title, type, param: null, code },
  };
  if (detail !== undefined) body.detail = detail;
  return body;
}
