/**
 * Starts the embedder: reads the config, starts loading the model in its worker, and listens at
 * once, so /health answers while the model loads (/ready and /v1 say model_not_ready until then).
 * Stops gracefully on SIGTERM/SIGINT: in-flight requests finish, then the worker ends.
 */
import { createAdmissionClient } from './admission-client.js';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { loadEngine } from './engine.js';
import { createEmbedderMetrics, measureEngine } from './metrics.js';
import { registerTracing, startTracing, traceAdmission, traceEngine } from './tracing.js';

async function main(): Promise<void> {
  const config = loadConfig();
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
  const client = createAdmissionClient({
    address: config.authzAddress, timeoutMs: config.admissionTimeoutMs, recordAttempts: config.admissionRecordAttempts,
  });
  const admission = tracing.enabled ? traceAdmission(client, tracing.tracer) : client;
  const app = buildApp({ config, engine, metrics, admission, draining: () => stopping });
  if (tracing.enabled) registerTracing(app, tracing.tracer);

  ready.then(
    () => app.log.info({ model: engine.modelId, pooling: manifest.pooling, nativeDimensions: manifest.nativeDimensions }, 'model ready'),
    (err: Error) => {
      app.log.fatal({ err: { message: err.message } }, 'model failed to load; exiting');
      process.exit(1);
    },
  );

  // Graceful drain: /ready turns 503 and no new connection is accepted; requests in flight finish
  // (their usage recorded through authz) within EMBEDDER_DRAIN_S, then the model worker ends.
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal, drainSeconds: config.drainSeconds }, 'shutting down: draining requests in flight');
    const deadline = setTimeout(() => {
      app.log.warn({ event: 'drain_timeout' }, 'requests still in flight after the drain period; exiting');
      process.exit(1);
    }, config.drainSeconds * 1000);
    deadline.unref();
    await app.close();
    admission.close();
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
