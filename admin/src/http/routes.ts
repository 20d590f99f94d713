/**
 * Routes and request validation taken from openapi/admin.yaml, handlers looked up by
 * `operationId` (the fastify-openapi-glue pattern): every documented operation must have a
 * handler and vice versa; every documented path answers other methods with 405 and `allow`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HTTPMethods } from 'fastify';
import { inlineRefs } from '../../../openapi/refs.js';
import { AdminHttpError } from './problems.js';
import { role as parseRole, type Role } from '../operations/rules.js';

type Json = Record<string, any>;

/** A handler given the authenticated caller (null only for operations with `security: []`). */
export type AdminHandler<C> = (request: FastifyRequest, reply: FastifyReply, caller: C) => Promise<unknown>;

export interface DocumentedOperation {
  readonly operationId: string;
  readonly method: HTTPMethods;
  readonly url: string;
  readonly schema: FastifySchema;
  /** False when the operation declares `security: []` (signing in). */
  readonly authenticated: boolean;
  /** The least role that may call it (`x-required-role`; viewer when absent). */
  readonly role: Role;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

// `examples` is an annotation ajv's draft-07 mode does not know.
const inline = (node: unknown, document: Json): any => inlineRefs(node, document, ['examples']);

function parameterSchema(parameters: Json[], where: string): Json | undefined {
  const found = parameters.filter((p) => p.in === where);
  if (found.length === 0) return undefined;
  const name = (p: Json): string => (where === 'header' ? String(p.name).toLowerCase() : p.name);
  return {
    type: 'object',
    properties: Object.fromEntries(found.map((p) => [name(p), p.schema])),
    required: found.filter((p) => p.required).map(name),
  };
}

/** Every operation of the document with its Fastify schema. */
export function documentedOperations(document: Json): DocumentedOperation[] {
  const operations: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries<Json>(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const parameters = inline([...(item.parameters ?? []), ...(op.parameters ?? [])], document) as Json[];
      const schema: FastifySchema = {};
      const body = inline(op.requestBody, document)?.content?.['application/json']?.schema;
      if (body) schema.body = body;
      const params = parameterSchema(parameters, 'path');
      const querystring = parameterSchema(parameters, 'query');
      const headers = parameterSchema(parameters, 'header');
      if (params) schema.params = params;
      if (querystring) schema.querystring = { ...querystring, additionalProperties: false };
      if (headers) schema.headers = headers;
      const authenticated = !(Array.isArray(op.security) && op.security.length === 0);
      const role = parseRole(op['x-required-role'] ?? 'viewer', `${op.operationId} x-required-role`);
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase() as HTTPMethods,
        url: path.replace(/\{([^}]+)\}/g, ':$1'),
        schema,
        authenticated,
        role,
      });
    }
  }
  return operations;
}

/** Registers every documented operation; `authenticate` runs first for secured ones. */
export function registerAdminRoutes<C>(
  app: FastifyInstance,
  document: Json,
  handlers: Readonly<Record<string, AdminHandler<C>>>,
  authenticate: (request: FastifyRequest, operation: DocumentedOperation) => Promise<C>,
): void {
  const operations = documentedOperations(document);
  const missing = operations.filter((op) => !handlers[op.operationId]).map((op) => op.operationId);
  const unknown = Object.keys(handlers).filter((id) => !operations.some((op) => op.operationId === id));
  if (missing.length > 0 || unknown.length > 0)
    throw new Error(`admin handlers do not match the document: missing [${missing}], unknown [${unknown}]`);
  for (const op of operations) {
    const handler = handlers[op.operationId]!;
    app.route({
      method: op.method,
      url: op.url,
      schema: op.schema,
      // Authentication runs before the body is read or validated: nothing anonymous is parsed.
      onRequest: async (request) => {
        if (op.authenticated) (request as FastifyRequest & { caller?: C }).caller = await authenticate(request, op);
      },
      handler: (request, reply) => handler(request, reply, (request as FastifyRequest & { caller: C }).caller),
    });
  }
  for (const url of new Set(operations.map((op) => op.url))) {
    const allowed = operations.filter((op) => op.url === url).map((op) => op.method);
    const allow = allowed.join(', ');
    app.route({
      method: app.supportedMethods.filter((m) => !allowed.includes(m as HTTPMethods)),
      url,
      onRequest: async () => {
        throw new AdminHttpError('method_not_allowed', `This path supports ${allow}.`, { allow });
      },
      handler: async () => undefined,
    });
  }
}
