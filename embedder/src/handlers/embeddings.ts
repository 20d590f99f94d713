/**
 * `createEmbeddings` (POST /v1/embeddings): the request's remaining rules (beyond the schema),
 * the engine call, and the response in the spec's shape.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE } from '../../../openapi/problems.js';
import type { components } from '../../../openapi/generated/schema.js';
import { IDENTITY_HEADERS } from '../../../authz/src/headers.js';
import type { EmbeddingEngine, EmbedOutcome, EmbedRequest } from '../engine.js';
import { ProblemError } from '../errors.js';
import { API_DIMENSIONS } from '../model/manifest.js';
import { noteOutcome } from '../request-log.js';
import { renderEmbeddingResponse, type ResponseHead } from '../response-body.js';
import { timingHeaders } from '../timing-headers.js';
import { truncationPolicy, type TruncationPolicy } from '../tokens.js';
import type { Admission } from '../admission-client.js';
import { Settlement, admissionIdOf, identityOf } from '../settlement.js';

type EmbeddingRequest = components['schemas']['EmbeddingRequest'];

const NOT_ENABLED = 'The organization has no access to the requested model, or it does not exist.';

/**
 * Checks what the schema cannot (served and granted model, dimensions, truncation value), in
 * the spec's order. `grantedModel` is authz's grant for this very request (absent when the
 * organization may not use the model, or when the request did not pass authz): the embedder
 * serves that model and nothing else, so no parse of the body elsewhere can widen access.
 */
export function checkRequest(
  body: EmbeddingRequest,
  engine: Pick<EmbeddingEngine, 'modelId' | 'maxTokens'>,
  grantedModel: string | undefined,
): TruncationPolicy {
  const truncation = truncationPolicy(body.truncate_prompt_tokens, engine.maxTokens);
  if (!truncation.ok) throw new ProblemError(truncation.code, truncation.detail);
  if (body.model !== engine.modelId || grantedModel !== body.model) {
    // The detail never repeats the requested model: it is client text.
    throw new ProblemError('model_not_enabled', NOT_ENABLED);
  }
  if (body.dimensions !== undefined) {
    throw new ProblemError(
      'invalid_request',
      `dimensions is not supported: this model always returns ${API_DIMENSIONS}-dimensional vectors.`,
    );
  }
  return truncation.policy;
}

/** The engine's refusals as problems; `retry-after` on the 503s (plus the token headers). */
function refusal(outcome: Exclude<EmbedOutcome, { kind: 'embedded' | 'cancelled' | 'refused' }>, retryAfter: number, headers: Record<string, string>): ProblemError {
  const wait = { ...headers, 'retry-after': String(retryAfter) };
  switch (outcome.kind) {
    case 'too_long': return new ProblemError('invalid_request', outcome.detail, headers);
    case 'overloaded': return new ProblemError('overloaded', 'The embedding queue is full; retry later.', wait);
    case 'not_ready': return new ProblemError('model_not_ready', 'The model is still loading; retry later.', wait);
  }
}

/**
 * Runs the engine with the settlement's admission (after tokenizing, before any model work) and
 * refunds the charged tokens whenever the outcome is not an embedding.
 */
async function embedSettled(
  engine: EmbeddingEngine, settlement: Settlement, request: Omit<EmbedRequest, 'admit'>, onRefundError: (error: unknown) => void,
): Promise<EmbedOutcome> {
  let outcome: EmbedOutcome;
  try {
    outcome = await engine.embed({ ...request, admit: (tokens) => settlement.admit(tokens) });
  } catch (error) {
    settlement.refund(onRefundError);
    throw error;
  }
  if (outcome.kind !== 'embedded') settlement.refund(onRefundError);
  return outcome;
}

/**
 * Builds the handler for `engine`: validate, tokenize, admit the tokens with authz, embed,
 * record the usage, answer. Every path that charged tokens and will not answer 200 refunds them.
 */
export function createEmbeddingsHandler(
  engine: EmbeddingEngine,
  admission: Admission,
  retryAfterSeconds: number,
  now: () => number = Date.now,
): RouteHandlerMethod {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as EmbeddingRequest;
    const grant = request.headers[IDENTITY_HEADERS.model];
    const policy = checkRequest(body, engine, typeof grant === 'string' ? grant : undefined);
    const identity = identityOf(request.headers);
    if (!identity) throw new ProblemError('model_not_enabled', NOT_ENABLED);
    const ids = { admissionId: admissionIdOf(request.headers), requestId: request.id };
    const settlement = new Settlement(admission, identity, ids, body.model, retryAfterSeconds);
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    noteOutcome(request, { inputs: inputs.length });

    // A client that hangs up should not keep its inputs in the queue.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const refundFailed = (error: unknown) => request.log.warn({ event: 'refund_failed', reason: (error as Error).message }, 'token refund failed');
    const outcome = await embedSettled(engine, settlement, { tenant: identity.org, inputs, inputType: body.input_type, policy, signal: gone.signal }, refundFailed);
    if (outcome.kind === 'refused') throw settlement.refusal!;
    if (outcome.kind === 'cancelled') {
      request.log.info('client went away; its queued inputs were dropped');
      reply.hijack();
      reply.raw.destroy();
      return reply;
    }
    if (outcome.kind !== 'embedded') throw refusal(outcome, retryAfterSeconds, settlement.headers);

    noteOutcome(request, { tokens: outcome.promptTokens });
    const head: ResponseHead = {
      id: `embd-${randomUUID().replaceAll('-', '')}`,
      object: 'list',
      created: Math.floor(now() / 1000),
      model: engine.modelId,
      usage: { prompt_tokens: outcome.promptTokens, total_tokens: outcome.promptTokens },
    };
    const json = await renderEmbeddingResponse(head, outcome.vectors, body.encoding_format ?? 'float').catch((error: unknown) => {
      settlement.refund(refundFailed);
      throw error;
    });
    // Durable before the response leaves: no 200 without its usage record.
    await settlement.record();
    return reply.type(JSON_CONTENT_TYPE).headers(settlement.headers).headers(timingHeaders(outcome.timing))
      .header('x-usage-total-tokens', String(outcome.promptTokens)).send(json);
  };
}
