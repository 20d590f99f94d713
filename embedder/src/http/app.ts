/**
 * Builds the embedder's Fastify app (unstarted; only main.ts listens). Routes come from the
 * OpenAPI document; the engine is injected so tests build the app around the generated model.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { SettlementStore } from '../settlement/store.js';
import type { EmbedderConfig } from '../config.js';
import type { EmbeddingEngine } from '../core/engine.js';
import { ProblemError } from '../../../openapi/problems.js';
import { BODY_LIMIT_BYTES, handleError, handleNotFound, sendProblem } from './errors.js';
import { createEmbeddingsHandler } from './handlers/embeddings.js';
import { getHealth, readyHandler } from './handlers/health.js';
import { parseJsonBody } from './json-body.js';
import { metricsHandler } from './handlers/metrics.js';
import type { EmbedderMetrics } from '../telemetry/metrics.js';
import { JSON_MEDIA_TYPE, registerMethodNotAllowed, registerOperations } from './openapi-routes.js';
import { CountsOnlyLogController, outcomeOf, safeSerializers } from '../telemetry/request-log.js';
import { REQUEST_ID_RULE } from '../settlement/settlement.js';
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
  /** The Batch API (files, batches); absent, its routes answer 404. */
  readonly batch?: BatchApi;
}

/** The longest client request id echoed back (the document's RequestId maxLength). */
/** Echoes a client `x-request-id` that meets the gateway's rule, else makes a UUID: a bad id is never echoed. */
function requestIdFor(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID_RULE.test(sent) ? sent : randomUUID();
}

/** Builds the app; call `.listen()` (main.ts) or `.inject()` (tests). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    logger: { level: deps.config.logLevel, serializers: safeSerializers, ...(deps.logStream ? { stream: deps.logStream } : {}) },
    logController: new CountsOnlyLogController(),
    genReqId: requestIdFor,
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    ajv: {
      // The contract, not ajv, decides types: no coercion ("5" is not 5); unknown fields are
      // dropped (`additionalProperties: false` + removeAdditional), as the spec says.
      customOptions: { coerceTypes: false, removeAdditional: true, useDefaults: true, allErrors: false },
    },
    frameworkErrors: (error, _request, reply) =>
      sendProblem(
        reply,
        new ProblemError('invalid_body', error.code === 'FST_ERR_BAD_URL' ? 'url: is not valid' : 'request: could not be read'),
      ),
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
  const batch = batchRoutes(app, deps.batch);
  requireGrant(app, ['/v1/embeddings'], deps.config.grantSecret, deps.config.retryAfterSeconds, Date.now, batch.urls);
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
    ...batch.handlers,
  });
  app.get('/ready', readyHandler(deps.engine, deps.settlement, deps.config.retryAfterSeconds, deps.draining));
  registerMethodNotAllowed(app, '/ready', ['GET']);
  app.get('/metrics', metricsHandler(deps.metrics, deps.config.metricsToken));
  registerMethodNotAllowed(app, '/metrics', ['GET']);
  return app;
}
