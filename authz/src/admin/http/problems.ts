/**
 * The admin API's one error path: every refusal and fault leaves as an RFC 9457 body from
 * openapi/admin.yaml's catalogue. Core refusals map by kind; Fastify's own errors (validation,
 * body parsing, size) are translated; anything else is a 500 that says nothing of the request.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { adminProblem, type AdminProblemCode } from '../../../../openapi/admin-document.js';
import { PROBLEM_CONTENT_TYPE } from '../../../../openapi/problems.js';
import { StoreUnavailableError } from '../../store/connection.js';
import { AdminError } from '../errors.js';

/** A refusal raised on purpose by the HTTP layer. */
export class AdminHttpError extends Error {
  constructor(
    readonly code: AdminProblemCode,
    readonly detail?: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail ?? code);
    this.name = 'AdminHttpError';
  }
}

const KINDS: Readonly<Record<AdminError['kind'], AdminProblemCode>> = { invalid: 'invalid_body', not_found: 'not_found', conflict: 'conflict' };

interface SchemaError {
  readonly instancePath?: string;
  readonly message?: string;
  readonly params?: Record<string, unknown>;
}

// "body.rpm: must be integer,null"; ajv messages name rules, never the rejected value.
function validationDetail(errors: readonly SchemaError[], context: string): string {
  const first = errors[0] ?? {};
  const missing = first.params?.missingProperty;
  const extra = first.params?.additionalProperty;
  const path = `${context}${(first.instancePath ?? '').replaceAll('/', '.')}`;
  if (typeof missing === 'string') return `${path}.${missing}: is required`;
  if (typeof extra === 'string') return `${path}.${extra}: is not a known field`;
  return `${path}: ${first.message ?? 'is not valid'}`;
}

/** Maps any error to the problem the client gets. */
export function toAdminProblem(error: unknown): AdminHttpError {
  if (error instanceof AdminHttpError) return error;
  if (error instanceof AdminError) return new AdminHttpError(KINDS[error.kind], error.message);
  if (error instanceof StoreUnavailableError) return new AdminHttpError('store_unavailable', 'Redis did not answer in time; try again.', { 'retry-after': '1' });
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return new AdminHttpError('invalid_body', validationDetail(fastifyError.validation as SchemaError[], fastifyError.validationContext ?? 'body'));
  if (fastifyError.statusCode === 413) return new AdminHttpError('payload_too_large', 'body: too large for the admin API');
  if (fastifyError.statusCode === 415 || fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new AdminHttpError('invalid_body', 'content-type: must be application/json');
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) return new AdminHttpError('invalid_body', 'body: must be valid JSON');
  return new AdminHttpError('internal_error', 'The admin API hit an unexpected error.');
}

/** Sends the problem response for `error`. */
export function sendAdminProblem(reply: FastifyReply, error: AdminHttpError): FastifyReply {
  const body = adminProblem(error.code, error.detail);
  return reply.code(body.status).headers(error.headers).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** Fastify's error handler: maps, logs faults (codes only), sends. */
export function handleAdminError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = toAdminProblem(error);
  if (mapped.code === 'internal_error' || mapped.code === 'store_unavailable') {
    request.log.error({ event: 'admin_fault', code: mapped.code, err: error instanceof Error ? { name: error.name, message: error.message } : String(error) }, 'admin request failed');
  }
  return sendAdminProblem(reply, mapped);
}
