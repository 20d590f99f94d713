/**
 * The embedder's one error path: every error a client sees leaves through `sendProblem` as the
 * gateway's RFC 9457 body from openapi/problems.ts. Fastify's own errors (validation, body
 * parsing, size) are mapped here; anything unexpected is a 500 that says nothing of the request.
 */
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM_CONTENT_TYPE, ProblemError, catalogue, problem } from '../../../openapi/problems.js';
import { noteOutcome } from '../telemetry/request-log.js';
import { validationDetail, type SchemaError } from '../../../openapi/validation-messages.js';
import { SettlementUnavailableError } from '../settlement/store.js';

/** The body limit the spec sets for every /v1 request: 1 MiB. */
export const BODY_LIMIT_BYTES = 1_048_576;

/** The detail of every 403 `model_not_enabled`: the same for a model not granted and one that does not exist. */
export const MODEL_NOT_ENABLED_DETAIL = 'The organization has no access to the requested model, or it does not exist.';

/** Sends the problem response for `code`. */
export function sendProblem(reply: FastifyReply, error: ProblemError): FastifyReply {
  const body = problem(error.code, error.detail);
  noteOutcome(reply.request, { code: error.code });
  return reply.code(body.status).headers(error.headers).type(PROBLEM_CONTENT_TYPE).send(body);
}

const FASTIFY_CODES: Readonly<Record<string, () => ProblemError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ProblemError('payload_too_large', `body: must be at most ${BODY_LIMIT_BYTES} bytes (1 MiB)`),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new ProblemError('invalid_body', 'content-type: must contain json'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ProblemError('invalid_body', 'body: must not be empty'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ProblemError('invalid_body', 'body: must be valid JSON'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ProblemError('invalid_body', 'content-length: must match the body'),
};

/** A failover takes a few seconds (scripts/fleet/README.md): ask again after one. */
const STORE_RETRY_AFTER_SECONDS = 1;

/** Maps any error to the problem the client gets (pure; the handler logs and sends). */
function toProblem(error: FastifyError | Error): ProblemError {
  if (error instanceof ProblemError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const root = fastifyError.validationContext === 'headers' ? 'headers' : 'body';
    return new ProblemError('invalid_body', validationDetail(fastifyError.validation as SchemaError[], root));
  }
  // Redis unreachable mid-request (a failover; Sentinel closes the clients of a demoted primary)
  // on a path that has no answer of its own for it (the Batch API's reads): fail closed, retry.
  if (error instanceof SettlementUnavailableError) {
    return new ProblemError('authorization_unavailable', 'The gateway cannot reach its store now; retry after the retry-after seconds.', {
      'retry-after': String(STORE_RETRY_AFTER_SECONDS),
    });
  }
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return known();
  const status = fastifyError.statusCode;
  if (status === 413) return FASTIFY_CODES.FST_ERR_CTP_BODY_TOO_LARGE!();
  // Other client errors Fastify detects while reading the request (aborted body, bad encoding).
  if (status !== undefined && status >= 400 && status < 500) return new ProblemError('invalid_body', 'body: could not be read');
  return new ProblemError('internal_error', 'The embedder hit an unexpected error; the request was not processed.');
}

/** Fastify's error handler: maps, logs faults (never the request body), sends. */
export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = toProblem(error);
  if (catalogue.get(mapped.code)!.status >= 500 && !(error instanceof ProblemError)) {
    request.log.error({ err: { type: error.name, message: error.message, stack: error.stack } }, 'unexpected error');
  }
  return sendProblem(reply, mapped);
}

/** Fastify's not-found handler: an unserved path. */
export function handleNotFound(_request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // The path is not echoed: a URL may carry anything, and details never repeat request data.
  return sendProblem(reply, new ProblemError('not_found', 'No such path; the embedder serves the paths of its OpenAPI document.'));
}

/** What Node's parser reports, as the client is told it (never the bytes it could not read). */
function clientErrorDetail(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') return 'headers: are too large';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request: did not arrive in time';
  return 'request: could not be read';
}

/**
 * Fastify's clientErrorHandler: Node's HTTP parser refused the request (a malformed header or
 * content-length, an unknown method, headers over Node's limit) before any route saw it. The
 * answer is the same problem body as every other error (400 invalid_body, as Envoy maps its own
 * codec errors), written on the socket, which then closes: what follows cannot be read.
 */
export function handleClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const body = JSON.stringify(problem('invalid_body', clientErrorDetail(error.code)));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
