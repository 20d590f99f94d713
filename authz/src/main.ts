/**
 * Starts authz: reads the configuration (a bad value stops the process, naming the variable),
 * connects to Redis in the background (Checks are UNAVAILABLE until it answers: fail closed),
 * binds the gRPC server, and shuts down gracefully on SIGINT/SIGTERM.
 */
import { ConfigError, loadConfig, redisTargetOf, type AuthzConfig } from './config.js';
import { createLogger } from './telemetry/log.js';
import { createAuthzMetrics } from './telemetry/metrics.js';
import { createMetricsServer, listenMetrics } from './telemetry/metrics-server.js';
import { bindServer, createServer } from './edge/server.js';
import { warnWhenNotPersistent } from './store/persistence.js';
import { createStore } from './store/redis.js';
import { startTracing } from './telemetry/tracing.js';
import { watchSecrets, type SecretValues } from '../../contract/secrets.js';

const SHUTDOWN_GRACE_MS = 5_000;

// The service cannot run without its callers' secrets: Envoy's caller token and Prometheus's
// metrics token (the config reads them as optional, so tests can build servers without them).
function configOrExit(): AuthzConfig & { metricsToken: SecretValues } {
  try {
    const config = loadConfig();
    const missing = [
      ...(config.callerToken || config.callerAuth === 'mesh'
        ? []
        : [
            'AUTHZ_CALLER_TOKEN / AUTHZ_CALLER_TOKEN_FILE: no caller token set and .local/authz-caller-token does not exist (run `make up`)',
          ]),
      ...(config.metricsToken
        ? []
        : ['METRICS_TOKEN / METRICS_TOKEN_FILE: no metrics token set and .local/metrics-token does not exist (run `make up`)']),
    ];
    if (missing.length > 0) throw new ConfigError(missing);
    return config as AuthzConfig & { metricsToken: SecretValues };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = configOrExit();
  const log = createLogger(config.logLevel);
  const target = redisTargetOf(config);
  const store = createStore(
    { ...target, prefix: config.redisKeyPrefix, timeoutMs: config.redisTimeoutMs },
    config.embedderRedisUser,
    (error) =>
      log.warn(
        { event: 'settlement_setup_failed', reason: error instanceof Error ? error.message : String(error) },
        'settlement setup failed; retrying',
      ),
  );
  store.onReadyChange((ready) =>
    log.info({ event: ready ? 'redis_up' : 'redis_down' }, ready ? 'redis connected' : 'redis connection lost'),
  );
  warnWhenNotPersistent(store, target, config.redisTimeoutMs, (persistence, warning) =>
    log.warn({ event: 'redis_not_persistent', ...persistence }, warning),
  );
  let draining = false;
  const metrics = createAuthzMetrics();
  metrics.watchRedis(() => store.isReady());
  const tracing = startTracing(config.otlpEndpoint);
  const server = createServer({
    config,
    store,
    log,
    isDraining: () => draining,
    metrics,
    tracer: tracing.enabled ? tracing.tracer : undefined,
  });
  const port = await bindServer(server, config.host, config.port);
  if (config.callerAuth === 'mesh')
    log.warn({ event: 'caller_auth_mesh' }, 'AUTHZ_CALLER_AUTH=mesh: Check answers any caller the mesh lets through');
  log.info(
    { event: 'listening', host: config.host, port, model: config.modelId, keyCacheTtlMs: config.keyCacheTtlMs, tracing: tracing.enabled },
    'authz listening',
  );
  // Metrics are for operators: a taken port is logged (and Prometheus shows the target down),
  // but Checks keep being answered.
  // A rotated Secret's new content is used without a restart (deploy/README.md, rotation).
  watchSecrets([config.grantSecret, config.callerToken, config.metricsToken], (reload) =>
    reload.event === 'secret_reloaded'
      ? log.info(reload, 'secret reloaded')
      : log.warn(reload, 'secret file refused; the values held stay'),
  );
  const metricsServer = createMetricsServer(metrics, config.metricsToken);
  listenMetrics(metricsServer, config.metricsHost, config.metricsPort).then(
    (bound) => log.info({ event: 'metrics_listening', host: config.metricsHost, port: bound }, 'metrics on GET /metrics'),
    (error: Error) =>
      log.error({ event: 'metrics_unavailable', reason: error.message }, 'metrics listener failed; serving Checks without it'),
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
