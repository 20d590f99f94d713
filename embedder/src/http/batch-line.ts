/**
 * One Batch API line run by `/v1/embeddings`' own rules: the gateway's JSON parser, the
 * EmbeddingRequest schema from the OpenAPI document (same validator options as the routes), the
 * handler's checks (checkRequest: model granted, dimensions, truncation), the token limit, then
 * the engine on the batch lane, and the same response body. A line that breaks a rule fails
 * alone, with the problem the online request would have got.
 */
import { randomUUID } from 'node:crypto';
import { Ajv } from 'ajv';
import type { components } from '../../../openapi/generated/schema.js';
import { openapiDocument } from '../../../openapi/document.js';
import { inlineRefs } from '../../../openapi/refs.js';
import { ProblemError, problem } from '../../../openapi/problems.js';
import { validationDetail, type SchemaError } from '../../../openapi/validation-messages.js';
import type { LineAdmission } from '../settlement/batch-store.js';
import type { EmbeddingEngine } from '../core/engine.js';
import { CpuGate } from '../core/cpu-gate.js';
import type { LineContext, LineExecutor, LineResult } from '../batch/line-executor.js';
import { checkRequest } from './handlers/embeddings.js';
import { parseJsonBody } from './json-body.js';
import { renderEmbeddingResponse } from './response-body.js';

type EmbeddingRequest = components['schemas']['EmbeddingRequest'];

/** Why an admission that is not `admitted` fails its line (or stops it). */
const REFUSALS: Partial<Record<LineAdmission, ProblemError>> = {
  model_not_enabled: new ProblemError('model_not_enabled', 'The organization has no access to the requested model, or it does not exist.'),
  over_budget: new ProblemError('rate_limit_exceeded', "The organization's monthly token budget is used up (hard stop)."),
};

const failed = (customId: string, error: ProblemError): LineResult => {
  const body = problem(error.code, error.detail);
  return { kind: 'failed', customId, status: body.status, code: error.code, body: JSON.stringify(body) };
};

/** The executor for `engine`; `now` dates the response bodies. */
export function batchLineExecutor(engine: EmbeddingEngine, now: () => number = Date.now): LineExecutor {
  const ajv = new Ajv({ coerceTypes: false, removeAdditional: true, useDefaults: true, allErrors: false, strict: false });
  const validate = ajv.compile(inlineRefs(openapiDocument.components.schemas.EmbeddingRequest, openapiDocument));
  // One line's response rendered at a time, between online requests (cpu-gate.ts).
  const renderGate = new CpuGate(engine.online);
  return async (raw, context) => {
    const line = parseJsonBody(raw) as { custom_id: string; body: unknown };
    const customId = line.custom_id;
    try {
      if (!validate(line.body)) throw new ProblemError('invalid_body', validationDetail((validate.errors ?? []) as SchemaError[], 'body'));
      return await run(engine, line.body as EmbeddingRequest, customId, context, now, renderGate);
    } catch (error) {
      if (error instanceof ProblemError) return failed(customId, error);
      throw error;
    }
  };
}

async function run(
  engine: EmbeddingEngine,
  body: EmbeddingRequest,
  customId: string,
  context: LineContext,
  now: () => number,
  gate: CpuGate,
) {
  const policy = checkRequest(body, engine, context.model || undefined);
  let admission: LineAdmission = 'stopped';
  const outcome = await engine.embed({
    tenant: context.org,
    inputs: typeof body.input === 'string' ? [body.input] : body.input,
    inputType: body.input_type,
    policy,
    lane: 'batch',
    admit: async (tokens) => {
      admission = await context.admit(tokens);
      return admission === 'admitted';
    },
  });
  if (outcome.kind === 'too_long') throw new ProblemError('invalid_request', outcome.detail);
  if (outcome.kind === 'refused') {
    const refusal = REFUSALS[admission];
    if (refusal) throw refusal;
    return { kind: 'not_run', customId } as const;
  }
  // Not ready, or the batch lane refused: a fault of this replica, not of the line; the segment is run again.
  if (outcome.kind !== 'embedded') throw new Error(`batch line not run: ${outcome.kind}`);
  const head = {
    id: `embd-${randomUUID().replaceAll('-', '')}`,
    object: 'list' as const,
    created: Math.floor(now() / 1000),
    model: engine.modelId,
    usage: { prompt_tokens: outcome.promptTokens, total_tokens: outcome.promptTokens },
  };
  const json = await gate.run((slicing) => renderEmbeddingResponse(head, outcome.vectors, body.encoding_format ?? 'float', slicing));
  return { kind: 'embedded', customId, tokens: outcome.promptTokens, body: json.toString('utf8') } as const;
}
