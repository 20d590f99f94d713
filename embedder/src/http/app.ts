/**
 * Builds the embedder's Fastify app (unstarted; only main.ts listens). Routes come from the
 * OpenAPI document; the engine is injected so tests build the app around the generated model.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { DestinationStream } from 'pino';
import type { SettlementStore } from '../settlement/store.js';
import type { EmbedderConfig } from '../config.js';
import type { EmbeddingEngine } from '../core/engine.js';
import { ProblemError } from '../../../openapi/problems.js';
import { BODY_LIMIT_BYTES, handleClientError, handleError, handleNotFound, sendProblem } from './errors.js';
import { createEmbeddingsHandler } from './handlers/embeddings.js';
import { getHealth, readyHandler } from './handlers/health.js';
import { createModelHandlers } from './handlers/models.js';
import { parseJsonBody } from './json-body.js';
import { metricsHandler } from './handlers/metrics.js';
import type { EmbedderMetrics } from '../telemetry/metrics.js';
import {
  acceptEveryMethod,
  documentedOperations,
  JSON_MEDIA_TYPE,
  registerMethodNotAllowed,
  registerOperations,
} from './openapi-routes.js';
import { CountsOnlyLogController, outcomeOf, safeSerializers } from '../telemetry/request-log.js';
import { REQUEST_ID_RULE } from '../../../contract/request-id.js';
import { requireGrant } from './grant.js';
import { batchRoutes, type BatchApi } from './batch-routes.js';

export interface AppDeps {
  readonly config: Pick<EmbedderConfig, 'logLevel' | 'retryAfterSeconds' | 'grantSecret' | 'settlementTimeoutMs' | 'metricsToken'>;
  readonly engine: EmbeddingEngine;
  /** The settlement on Redis: token limits before the work, usage before the answer. */
  readonly settlement: SettlementStore;
  /** This app's metrics (its own registry); the engine's batches should report to the same. */
  readonly metrics: EmbedderMetrics;
  /** Where log lines go (tests capture them); stdout when absent. */
  readonly logStream?: DestinationStream;
  /** True once a graceful stop began: /ready says 503 while in-flight requests finish. */
  readonly draining?: () => boolean;
  /** The clock for `created`; tests pass a fixed one. */
  readonly now?: () => number;
  /** The served model's fingerprint (`x-model-fingerprint`); main.ts computes it at start-up. */
  readonly modelFingerprint?: string;
  /** Unix seconds when the served model was installed (`created` in GET /v1/models); 0 when not given. */
  readonly modelCreated?: number;
  /** The Batch API (files, batches); absent, its routes answer 404. */
  readonly batch?: BatchApi;
}

/** Echoes a client `x-request-id` that meets the gateway's rule, else makes a UUID: a bad id is never echoed. */
function requestIdFor(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID_RULE.test(sent) ? sent : randomUUID();
}

// Envoy's health check asks /ready every second, Kubernetes /health, Prometheus /metrics: their
// successes were most of the log (292 of 328 lines after 15 minutes). Failed probes are logged.
/** The online path whose requests hold the batch lane back while in flight. */
const EMBEDDINGS_ROUTE = '/v1/embeddings';

const PROBE_ROUTES: ReadonlySet<string> = new Set(['/ready', '/health', '/metrics']);

function quietProbe(request: FastifyRequest, reply: FastifyReply): boolean {
  return reply.statusCode < 400 && PROBE_ROUTES.has(request.routeOptions.url ?? '');
}

/** RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (the problem body, not Node's bare one). */
async function requireHost(request: FastifyRequest): Promise<void> {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    // Closed after the answer, as Node closes after any request it cannot parse.
    throw new ProblemError('invalid_body', 'host: is required', { connection: 'close' });
  }
}

/** Builds the app; call `.listen()` (main.ts) or `.inject()` (tests). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    logger: { level: deps.config.logLevel, serializers: safeSerializers, ...(deps.logStream ? { stream: deps.logStream } : {}) },
    logController: new CountsOnlyLogController(quietProbe),
    genReqId: requestIdFor,
    // Node's parser refusals get the gateway's problem body too, not Fastify's own JSON.
    clientErrorHandler: handleClientError,
    // Node would answer a request without Host with a bare 400 of its own; requireHost does it
    // with the problem body.
    http: { requireHostHeader: false },
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    ajv: {
      // The contract, not ajv, decides types: no coercion ("5" is not 5); unknown fields are
      // dropped (`additionalProperties: false` + removeAdditional), as the spec says.
      customOptions: { coerceTypes: false, removeAdditional: true, useDefaults: true, allErrors: false },
    },
    // Before the hooks run, so the request id is set here as onSend would.
    frameworkErrors: (error, request, reply) =>
      sendProblem(
        reply.header('x-request-id', request.id),
        new ProblemError('invalid_body', error.code === 'FST_ERR_BAD_URL' ? 'url: is not valid' : 'request: could not be read'),
      ),
  });
  // Every method Node parses reaches the router, so a served path answers any other with 405.
  acceptEveryMethod(app);
  app.addHook('onRequest', requireHost);
  // Online requests in flight hold the batch lane back until they end (core/online-activity.ts).
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'POST' && request.routeOptions.url === EMBEDDINGS_ROUTE) reply.raw.once('close', deps.engine.online.begin());
  });

  // A media type containing "json" is parsed as JSON (spec rule 1) by the gateway's one strict
  // parser (json-body.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_MEDIA_TYPE, { parseAs: 'buffer' }, (request, body, done) => {
    // An operation without a body (POST /v1/batches/{id}/cancel), sent as an empty JSON request
    // by the OpenAI Python SDK, has nothing to parse.
    if ((body as Buffer).length === 0 && !request.routeOptions.schema?.body) return done(null, undefined);
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser('*', async () => {
    throw new ProblemError('invalid_body', 'content-type: must contain json');
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.observeRequest({
      route: request.routeOptions.url,
      method: request.method,
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
      ...outcomeOf(request),
    });
  });
  deps.metrics.watchQueue(() => ({ inputs: deps.engine.queuedInputs(), tokens: deps.engine.queuedTokens() }));
  // Every operation the document secures with the API key is served only with authz's grant.
  const secured = documentedOperations()
    .filter((op) => op.secured)
    .map((op) => `${op.method} ${op.url}`);
  requireGrant(app, secured, deps.config.grantSecret, deps.config.retryAfterSeconds);
  const batch = batchRoutes(app, deps.batch);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);

  registerOperations(app, {
    createEmbeddings: createEmbeddingsHandler(deps.engine, deps.settlement, {
      retryAfterSeconds: deps.config.retryAfterSeconds,
      settlementTimeoutMs: deps.config.settlementTimeoutMs,
      now: deps.now,
      modelFingerprint: deps.modelFingerprint,
    }),
    getHealth,
    ...createModelHandlers({ id: deps.engine.modelId, created: deps.modelCreated ?? 0 }),
    ...batch.handlers,
  });
  app.get('/ready', readyHandler(deps.engine, deps.settlement, deps.config.retryAfterSeconds, deps.draining));
  registerMethodNotAllowed(app, '/ready', ['GET']);
  app.get('/metrics', metricsHandler(deps.metrics, deps.config.metricsToken));
  registerMethodNotAllowed(app, '/metrics', ['GET']);
  return app;
}
