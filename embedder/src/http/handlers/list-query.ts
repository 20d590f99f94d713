/** What the Files and Batches list operations share: the caller's organization, the cursor query, the page shape. */
import type { FastifyRequest } from 'fastify';
import { ProblemError } from '../../../../openapi/problems.js';

/** The organization the verified grant names; a route without one is a bug, not a client error. */
export function orgOf(request: FastifyRequest): string {
  if (!request.grant) throw new ProblemError('internal_error', 'The request reached the handler without a grant.');
  return request.grant.org;
}

/** `after` and `limit` from the query string (OpenAI's cursor pagination), checked. */
export function listQuery(request: FastifyRequest, maxLimit: number): { after?: string; limit: number } {
  const query = request.query as Record<string, unknown>;
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (typeof query.limit === 'object' || !Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
    throw new ProblemError('invalid_body', `limit: must be an integer from 1 to ${maxLimit}`);
  }
  const after = query.after;
  if (after !== undefined && (typeof after !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(after))) {
    throw new ProblemError('invalid_body', 'after: must be an id from an earlier page');
  }
  return { limit, ...(typeof after === 'string' ? { after } : {}) };
}

/** OpenAI's list page. */
export function page<T extends { id: string }>(data: readonly T[], hasMore: boolean) {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}
