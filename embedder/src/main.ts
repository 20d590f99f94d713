/**
 * Starts the embedder: reads the config, starts loading the model in its worker, and listens at
 * once, so /health answers while the model loads (/ready and /v1 say model_not_ready until then).
 * Stops gracefully on SIGTERM/SIGINT: in-flight requests finish, then the worker ends.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openSettlementStore } from './settlement/store.js';
import { buildApp } from './http/app.js';
import { loadConfig } from './config.js';
import { loadEngine } from './core/engine.js';
import { modelFingerprint, modelInstalledAt } from './model/fingerprint.js';
import { createEmbedderMetrics, measureEngine, measureSettlement } from './telemetry/metrics.js';
import { registerTracing, startTracing, traceEngine, traceSettlement } from './telemetry/tracing.js';
import { startBatchService } from './batch/service.js';
import { batchLineExecutor } from './http/batch-line.js';
import { parseJsonBody } from './http/json-body.js';
import { watchSecrets } from '../../contract/secrets.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Once, before anything starts: every 200 names the exact files that produced its vectors.
  const fingerprint = await modelFingerprint(config.modelDir);
  const installedAt = await modelInstalledAt(config.modelDir);
  let stopping = false;
  const metrics = createEmbedderMetrics({ inputs: config.queueMaxInputs, tokens: config.queueMaxTokens });
  const onFatal = (err: Error): void => {
    if (stopping) return;
    app.log.fatal({ err: { message: err.message } }, 'model worker failed; exiting');
    process.exit(1);
  };
  const tracing = startTracing(config.otlpEndpoint);
  const loaded = loadEngine(config, { onFatal, onBatch: metrics.observeBatch });
  const { manifest, ready } = loaded;
  const measured = measureEngine(loaded.engine, metrics);
  const engine = tracing.enabled ? traceEngine(measured, tracing.tracer) : measured;
  // Each command bounded by the settlement's own wait: a stalled Redis fails the request closed.
  const store = measureSettlement(
    openSettlementStore({
      ...config.redis,
      timeoutMs: config.settlementTimeoutMs,
      minReplicas: config.settlementMinReplicas,
      waitMs: config.settlementWaitMs,
    }),
    metrics,
  );
  const settlement = tracing.enabled ? traceSettlement(store, tracing.tracer) : store;
  // The Batch API, when its key-encryption key is configured: workers share the queue on Redis.
  let warn = (_reason: string): void => undefined;
  const batch = config.batch
    ? await startBatchService(config.batch, {
        redis: config.redis,
        parseLine: parseJsonBody,
        execute: batchLineExecutor(engine),
        isReady: () => engine.isReady() && !stopping,
        onError: (err) => warn((err as Error).message),
      })
    : undefined;
  const app = buildApp({
    config,
    engine,
    metrics,
    settlement,
    draining: () => stopping,
    modelFingerprint: fingerprint,
    modelCreated: installedAt,
    batch,
  });
  if (tracing.enabled) registerTracing(app, tracing.tracer);
  // A rotated Secret's new content is used without a restart (deploy/README.md, rotation).
  watchSecrets([config.grantSecret, config.metricsToken], (reload) =>
    reload.event === 'secret_reloaded'
      ? app.log.info(reload, 'secret reloaded')
      : app.log.warn(reload, 'secret file refused; the values held stay'),
  );
  warn = (reason) => app.log.warn({ event: 'batch_fault', reason }, 'batch worker fault');

  ready.then(
    () =>
      app.log.info(
        { model: engine.modelId, fingerprint, pooling: manifest.pooling, nativeDimensions: manifest.nativeDimensions },
        'model ready',
      ),
    (err: Error) => {
      app.log.fatal({ err: { message: err.message } }, 'model failed to load; exiting');
      process.exit(1);
    },
  );

  // Graceful drain: /ready turns 503; for EMBEDDER_DRAIN_NOTICE_MS requests are still served, so a
  // load balancer that health-checks /ready takes this replica out of rotation before it stops
  // listening (a replacement started at the same address would otherwise be sent requests while
  // its model loads); then no new connection is accepted, requests in flight finish (their usage
  // recorded) within EMBEDDER_DRAIN_S, and the model worker ends.
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal, drainSeconds: config.drainSeconds }, 'shutting down: draining requests in flight');
    const deadline = setTimeout(() => {
      app.log.warn({ event: 'drain_timeout' }, 'requests still in flight after the drain period; exiting');
      process.exit(1);
    }, config.drainSeconds * 1000);
    deadline.unref();
    if (config.drainNoticeMs > 0) await sleep(config.drainNoticeMs);
    await app.close();
    await batch?.stop();
    settlement.close();
    await engine.close();
    app.log.info({ event: 'drained' }, 'stopped');
    await tracing.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ host: config.host, port: config.port });
}

main().catch((err: Error) => {
  // Start-up errors (bad config, unreadable model directory) are for the operator, not a client.
  process.stderr.write(`embedder failed to start: ${err.message}\n`);
  process.exit(1);
});
