/**
 * The admin API's one error path: every refusal and fault leaves as an RFC 9457 body from
 * openapi/admin.yaml's catalogue. Core refusals map by kind; Fastify's own errors (validation,
 * body parsing, size) are translated; anything else is a 500 that says nothing of the request.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { adminProblem, type AdminProblemCode } from '../../../openapi/admin-document.js';
import { PROBLEM_CONTENT_TYPE, ProblemError } from '../../../openapi/problems.js';
import { validationDetail, type SchemaError } from '../../../openapi/validation-messages.js';
import { StoreUnavailableError } from '../../../contract/redis-connection.js';
import { AdminError } from '../operations/errors.js';

/** A refusal raised on purpose by the HTTP layer: the gateway's one problem error, with the admin catalogue's codes. */
export class AdminHttpError extends ProblemError<AdminProblemCode> {}

const KINDS: Readonly<Record<AdminError['kind'], AdminProblemCode>> = {
  invalid: 'invalid_body',
  not_found: 'not_found',
  conflict: 'conflict',
  unauthorized: 'admin_unauthorized',
  forbidden: 'admin_forbidden',
};

/** Maps any error to the problem the client gets. */
function toAdminProblem(error: unknown): AdminHttpError {
  if (error instanceof AdminHttpError) return error;
  if (error instanceof AdminError) return new AdminHttpError(KINDS[error.kind], error.message);
  if (error instanceof StoreUnavailableError)
    return new AdminHttpError('store_unavailable', 'Redis did not answer in time; try again.', { 'retry-after': '1' });
  const fastifyError = error as FastifyError;
  if (fastifyError.validation)
    return new AdminHttpError(
      'invalid_body',
      validationDetail(fastifyError.validation as SchemaError[], fastifyError.validationContext ?? 'body'),
    );
  if (fastifyError.statusCode === 413) return new AdminHttpError('payload_too_large', 'body: too large for the admin API');
  if (fastifyError.statusCode === 415 || fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new AdminHttpError('invalid_body', 'content-type: must be application/json');
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500)
    return new AdminHttpError('invalid_body', 'body: must be valid JSON');
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
    request.log.error(
      {
        event: 'admin_fault',
        code: mapped.code,
        err: error instanceof Error ? { name: error.name, message: error.message } : String(error),
      },
      'admin request failed',
    );
  }
  return sendAdminProblem(reply, mapped);
}
