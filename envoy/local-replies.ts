/**
 * The problem bodies of the replies Envoy makes itself (404, 405, 413, 503 …), built from the
 * one catalogue in openapi/problems.ts so Envoy's replies cannot be told apart from the
 * services' by their shape. The details are fixed sentences: Envoy never echoes request text.
 */
import { REQUEST_ID_HEADER, REQUEST_ID_RULE_TEXT } from '../contract/request-id.js';
import { problem, type ProblemCode } from '../openapi/problems.js';

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
