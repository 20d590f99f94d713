/**
 * `createEmbeddings` (POST /v1/embeddings): the request's remaining rules (beyond the schema),
 * the engine call, and the response in the spec's shape.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { JSON_CONTENT_TYPE, ProblemError } from '../../../../openapi/problems.js';
import type { components } from '../../../../openapi/generated/schema.js';
import type { EmbeddingEngine, EmbedOutcome, EmbedRequest } from '../../core/engine.js';
import { API_DIMENSIONS } from '../../../../contract/model-manifest.js';
import { noteOutcome } from '../../telemetry/request-log.js';
import { MODEL_NOT_ENABLED_DETAIL } from '../errors.js';
import { renderEmbeddingResponse, type ResponseHead } from '../response-body.js';
import { timingHeaders } from '../timing-headers.js';
import { fingerprintHeaders, truncationHeaders } from '../result-headers.js';
import { inputTypeOf } from '../input-type.js';
import { truncationPolicy, type TruncationPolicy } from '../../core/tokens.js';
import { RequestSettlement } from '../../settlement/settlement.js';
import type { SettlementStore } from '../../settlement/store.js';

type EmbeddingRequest = components['schemas']['EmbeddingRequest'];

/**
 * Checks what the schema cannot (served and granted model, dimensions, truncation value), in
 * the spec's order. `grantedModel` is authz's grant for this very request (absent when the
 * organization may not use the model, or when the request did not pass authz): the embedder
 * serves that model and nothing else, so no parse of the body elsewhere can widen access. A
 * Batch API line passes the same checks (batch-line.ts), with its batch's granted model.
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
    throw new ProblemError('model_not_enabled', MODEL_NOT_ENABLED_DETAIL);
  }
  // null is the OpenAI SDKs' "not set" (LanceDB sends it); any integer, 1024 included, is refused.
  if (body.dimensions !== undefined && body.dimensions !== null) {
    throw new ProblemError(
      'invalid_request',
      `dimensions is not supported: this model always returns ${API_DIMENSIONS}-dimensional vectors.`,
    );
  }
  return truncation.policy;
}

/** The engine's refusals as problems; `retry-after` on the 503s (plus the token headers). */
function refusal(
  outcome: Exclude<EmbedOutcome, { kind: 'embedded' | 'cancelled' | 'refused' }>,
  retryAfter: number,
  headers: Record<string, string>,
): ProblemError {
  const wait = { ...headers, 'retry-after': String(retryAfter) };
  switch (outcome.kind) {
    case 'too_long':
      return new ProblemError('invalid_request', outcome.detail, headers);
    case 'overloaded': {
      // How long this organization's queued work (and its requests told to wait before) needs:
      // the OpenAI SDKs wait retry-after-ms (or retry-after) when it is under a minute.
      const seconds = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
      const honest = { ...headers, 'retry-after': String(seconds), 'retry-after-ms': String(Math.max(1, Math.ceil(outcome.retryAfterMs))) };
      return new ProblemError('overloaded', `The embedding queue is full for this organization; retry in about ${seconds} s.`, honest);
    }
    case 'not_ready':
      return new ProblemError('model_not_ready', 'The model is still loading; retry later.', wait);
  }
}

/**
 * Runs the engine with the settlement's admission (after tokenizing, before any model work) and
 * refunds the charged tokens whenever the outcome is not an embedding.
 */
async function embedSettled(
  engine: EmbeddingEngine,
  settlement: RequestSettlement,
  request: Omit<EmbedRequest, 'admit'>,
  onRefundError: (error: unknown) => void,
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

export interface EmbeddingsOptions {
  readonly retryAfterSeconds: number;
  /** How long one admit, and one record (retries included), may take. */
  readonly settlementTimeoutMs: number;
  /** The clock for `created`; tests pass a fixed one. */
  readonly now?: () => number;
  /** `x-model-fingerprint` (model/fingerprint.ts), computed at start-up. */
  readonly modelFingerprint?: string;
}

/**
 * Builds the handler for `engine`: validate, tokenize, admit the tokens on Redis, embed, record
 * the usage, answer. Every path that charged tokens and will not answer 200 refunds them. The
 * request's grant was verified before its body was read (grant.ts).
 */
export function createEmbeddingsHandler(engine: EmbeddingEngine, store: SettlementStore, options: EmbeddingsOptions): RouteHandlerMethod {
  const { retryAfterSeconds } = options;
  const now = options.now ?? Date.now;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as EmbeddingRequest;
    const grant = request.grant;
    if (!grant) throw new ProblemError('internal_error', 'The request reached the handler without a grant.');
    const policy = checkRequest(body, engine, grant.model || undefined);
    const settlement = new RequestSettlement(store, grant, body.model, request.id, {
      timeoutMs: options.settlementTimeoutMs,
      retryAfterSeconds,
    });
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    noteOutcome(request, { inputs: inputs.length });

    // A client that hangs up should not keep its inputs in the queue.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const refundFailed = (error: unknown) =>
      request.log.warn({ event: 'refund_failed', reason: (error as Error).message }, 'token refund failed');
    const outcome = await embedSettled(
      engine,
      settlement,
      { tenant: grant.org, inputs, inputType: inputTypeOf(body.input_type, request.headers), policy, signal: gone.signal },
      refundFailed,
    );
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
    return reply
      .type(JSON_CONTENT_TYPE)
      .headers(settlement.headers)
      .headers(timingHeaders(outcome.timing))
      .headers(fingerprintHeaders(options.modelFingerprint))
      .headers(truncationHeaders(outcome.truncated))
      .header('x-usage-total-tokens', String(outcome.promptTokens))
      .send(json);
  };
}
