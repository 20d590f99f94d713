/**
 * Starts authz: reads the configuration (a bad value stops the process, naming the variable),
 * connects to Redis in the background (Checks are UNAVAILABLE until it answers: fail closed),
 * binds the gRPC server, and shuts down gracefully on SIGINT/SIGTERM.
 */
import { ConfigError, loadConfig, type AuthzConfig } from './config.js';
import { createLogger } from './log.js';
import { createAuthzMetrics } from './metrics.js';
import { createMetricsServer, listenMetrics } from './metrics-server.js';
import { bindServer, createServer } from './server.js';
import { warnWhenNotPersistent } from './store/persistence.js';
import { createStore } from './store/redis.js';
import { startTracing } from './tracing.js';

const SHUTDOWN_GRACE_MS = 5_000;

function configOrExit(): AuthzConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = configOrExit();
  const log = createLogger(config.logLevel);
  const target = { url: config.redisUrl, sentinels: config.redisSentinels, sentinelName: config.redisSentinelName };
  const store = createStore({ ...target, prefix: config.redisKeyPrefix, timeoutMs: config.redisTimeoutMs });
  store.onReadyChange((ready) => log.info({ event: ready ? 'redis_up' : 'redis_down' }, ready ? 'redis connected' : 'redis connection lost'));
  warnWhenNotPersistent(store, target, config.redisTimeoutMs, (persistence, warning) => log.warn({ event: 'redis_not_persistent', ...persistence }, warning));
  let draining = false;
  const metrics = createAuthzMetrics();
  metrics.watchRedis(() => store.isReady());
  const tracing = startTracing(config.otlpEndpoint);
  const server = createServer({ config, store, log, isDraining: () => draining, metrics, tracer: tracing.enabled ? tracing.tracer : undefined });
  const port = await bindServer(server, config.host, config.port);
  log.info({ event: 'listening', host: config.host, port, model: config.modelId, keyCacheTtlMs: config.keyCacheTtlMs, tracing: tracing.enabled }, 'authz listening');
  // Metrics are for operators: a taken port is logged (and Prometheus shows the target down),
  // but Checks keep being answered.
  const metricsServer = createMetricsServer(metrics);
  listenMetrics(metricsServer, config.metricsHost, config.metricsPort).then(
    (bound) => log.info({ event: 'metrics_listening', host: config.metricsHost, port: bound }, 'metrics on GET /metrics'),
    (error: Error) => log.error({ event: 'metrics_unavailable', reason: error.message }, 'metrics listener failed; serving Checks without it'),
  );

  const shutdown = (signal: string): void => {
    if (draining) return;
    draining = true;
    log.info({ event: 'shutdown', signal, drainMs: config.drainMs }, 'shutting down');
    setTimeout(() => {
      const force = setTimeout(() => server.forceShutdown(), SHUTDOWN_GRACE_MS).unref();
      server.tryShutdown(() => {
        clearTimeout(force);
        metricsServer.close();
        void Promise.allSettled([store.close(), tracing.shutdown()]).then(() => process.exit(0));
      });
    }, config.drainMs);
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`authz failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
