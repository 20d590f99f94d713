/**
 * `listModels` (GET /v1/models) and `retrieveModel` (GET /v1/models/{model}): OpenAI's model list
 * and model object, for the SDKs' `models.list()` / `models.retrieve()` and the tools that list
 * models before they embed. An organization sees exactly what authz granted this request: the
 * served model when it may use it, nothing otherwise (the grant's model is then '').
 */
import type { FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { components } from '../../../../openapi/generated/schema.js';
import { JSON_CONTENT_TYPE, ProblemError } from '../../../../openapi/problems.js';
import { MODEL_NOT_ENABLED_DETAIL } from '../errors.js';

type Model = components['schemas']['Model'];
type ModelList = components['schemas']['ModelList'];

/** The served model as the list shows it. */
export interface ServedModel {
  readonly id: string;
  /** Unix seconds when its weights were installed. */
  readonly created: number;
}

// The document fixes it (a const): the service that serves the model, not an upstream vendor.
const OWNED_BY: Model['owned_by'] = 'clinical-embedding-gateway';

/** The models this request's grant allows: the served one when authz granted it, else none. */
function grantedModels(request: FastifyRequest, served: ServedModel): Model[] {
  const granted = request.grant?.model ?? '';
  if (granted === '' || granted !== served.id) return [];
  return [{ id: served.id, object: 'model', created: served.created, owned_by: OWNED_BY }];
}

/** The two handlers, around the served model. */
export function createModelHandlers(served: ServedModel): { listModels: RouteHandlerMethod; retrieveModel: RouteHandlerMethod } {
  return {
    listModels: async (request, reply) => {
      const body: ModelList = { object: 'list', data: grantedModels(request, served) };
      return reply.type(JSON_CONTENT_TYPE).send(body);
    },
    retrieveModel: async (request, reply) => {
      const { model } = request.params as { model: string };
      const found = grantedModels(request, served).find((m) => m.id === model);
      // Unknown and not granted answer alike (as POST /v1/embeddings does), never echoing the id.
      if (!found) throw new ProblemError('model_not_enabled', MODEL_NOT_ENABLED_DETAIL);
      return reply.type(JSON_CONTENT_TYPE).send(found);
    },
  };
}
