/**
 * Routes and request validation taken from the OpenAPI document, handlers looked up by
 * `operationId` (the fastify-openapi-glue pattern in ~100 lines). A small loader of our own
 * rather than the plugin: it is not a dependency here, two operations need no framework, and
 * the loader also derives what the glue does not: 405 with `allow` for every documented path,
 * and the spec's "Content-Type must contain json" rule for operations with a JSON body.
 */
import { METHODS } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HTTPMethods, RouteHandlerMethod } from 'fastify';
import { openapiDocument } from '../../../openapi/document.js';
import { inlineRefs } from '../../../openapi/refs.js';
import { ProblemError } from '../../../openapi/problems.js';

/** Handlers by operationId; every operation of the document must have one and vice versa. */
export type OperationHandlers = Readonly<Record<string, RouteHandlerMethod>>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** One documented operation, ready for `app.route`. */
export interface DocumentedOperation {
  readonly operationId: string;
  readonly method: HTTPMethods;
  readonly url: string;
  readonly schema: FastifySchema;
  readonly jsonBody: boolean;
  /** Needs the API key (the document's `security`), so the embedder needs authz's grant for it. */
  readonly secured: boolean;
}

type Json = Record<string, any>;

/** Reads every operation of the document: method, Fastify-style url, body and header schemas. */
export function documentedOperations(document: Json = openapiDocument): DocumentedOperation[] {
  const operations: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries<Json>(document.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      if (typeof op.operationId !== 'string') throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const schema: FastifySchema = {};
      const body = inlineRefs(op.requestBody, document)?.content?.['application/json']?.schema;
      if (body) schema.body = body;
      const headers = (inlineRefs(op.parameters ?? [], document) as Json[]).filter((p) => p.in === 'header');
      if (headers.length > 0) {
        schema.headers = {
          type: 'object',
          properties: Object.fromEntries(headers.map((p) => [p.name.toLowerCase(), p.schema])),
          required: headers.filter((p) => p.required).map((p) => p.name.toLowerCase()),
        };
      }
      const url = path.replace(/\{([^}]+)\}/g, ':$1');
      const security = (op.security ?? document.security ?? []) as unknown[];
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase() as HTTPMethods,
        url,
        schema,
        jsonBody: Boolean(body),
        secured: security.length > 0,
      });
    }
  }
  return operations;
}

/** Registers every documented operation with its handler, and 405s for the other methods. */
export function registerOperations(app: FastifyInstance, handlers: OperationHandlers, document: Json = openapiDocument): void {
  const operations = documentedOperations(document);
  const missing = operations.filter((op) => !handlers[op.operationId]).map((op) => op.operationId);
  const unused = Object.keys(handlers).filter((id) => !operations.some((op) => op.operationId === id));
  if (missing.length > 0 || unused.length > 0) {
    throw new Error(`handlers do not match the document: missing [${missing.join(', ')}], unknown [${unused.join(', ')}]`);
  }
  for (const op of operations) {
    app.route({
      method: op.method,
      url: op.url,
      schema: op.schema,
      ...(op.jsonBody ? { onRequest: requireJsonContentType } : {}),
      handler: handlers[op.operationId]!,
    });
  }
  for (const url of new Set(operations.map((op) => op.url))) {
    registerMethodNotAllowed(
      app,
      url,
      operations.filter((op) => op.url === url).map((op) => op.method),
    );
  }
}

/**
 * Lets every method Node's parser accepts (http.METHODS: PROPFIND, PURGE, …) reach the router;
 * Fastify routes only its own few, so a served path would answer the others 404 instead of the
 * spec's 405. CONNECT never reaches a request handler in Node, so it is left out.
 */
export function acceptEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method);
  }
}

/** Answers 405 with `allow` for every method `url` does not serve, before any body is read. */
export function registerMethodNotAllowed(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const others = app.supportedMethods.filter((m) => !allowed.includes(m));
  const allow = allowed.join(', ');
  app.route({
    method: others,
    url,
    onRequest: async () => {
      throw new ProblemError('method_not_allowed', `This path supports ${allow}.`, { allow });
    },
    handler: async () => undefined,
  });
}

/**
 * Spec rule 1: a body is JSON only when its Content-Type contains `json`. Only the media type
 * (before any `;` parameter) counts, so `text/plain; x=json` is not JSON.
 */
export const JSON_MEDIA_TYPE = /^[^;]*json/i;

async function requireJsonContentType(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!JSON_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
    throw new ProblemError('invalid_body', 'content-type: must contain json');
  }
}
