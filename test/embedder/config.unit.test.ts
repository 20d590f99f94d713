import { describe, expect, it } from 'vitest';
import { usableCores } from '../../contract/usable-cores.js';
import { loadConfig } from '../../embedder/src/config.js';

/** What every embedder must be given: the grant secret it shares with authz (none exists under .local/ in CI). */
const GRANT = { GRANT_SECRET: 'embedder-config-test-grant-secret-0123456789', REDIS_URL_FILE: '/nonexistent/redis-url' };

describe('embedder config', () => {
  it('has the agreed defaults and is frozen', () => {
    const config = loadConfig(GRANT);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8081,
      modelId: undefined,
      // Unset: derived from the model and the threads when the engine loads (batch-budget.test.ts).
      batchMaxTokens: undefined,
      batchMaxSize: 32,
      queueMaxInputs: 4_000,
      queueMaxTokens: 2_097_152,
      queueTenantMaxInputs: 1_000,
      queueTenantMaxTokens: 524_288,
      retryAfterSeconds: 1,
      logLevel: 'info',
      drainNoticeMs: 0,
    });
    // One organization's share holds one request of 1,000 inputs × 512 tokens, and leaves room for others.
    expect(config.queueTenantMaxInputs).toBeGreaterThanOrEqual(1_000);
    expect(config.queueTenantMaxTokens).toBeGreaterThanOrEqual(1_000 * 512);
    expect(config.queueMaxTokens).toBeGreaterThan(config.queueTenantMaxTokens);
    expect(config.queueMaxInputs).toBeGreaterThan(config.queueTenantMaxInputs);
    expect(config.modelDir.endsWith('.local/models/default')).toBe(true);
    expect(config.ortIntraOpThreads).toBeGreaterThanOrEqual(1);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      ...GRANT,
      REDIS_URL: 'redis://redis:6379',
      REDIS_KEY_PREFIX: 'p:',
      REDIS_USERNAME: 'ctg-embedder',
      REDIS_PASSWORD: 'pw',
      SETTLEMENT_TIMEOUT_MS: '250',
      EMBEDDER_HOST: '0.0.0.0',
      EMBEDDER_PORT: '0',
      MODEL_DIR: '/m',
      MODEL_ID: 'served',
      MODEL_SESSIONS: '3',
      ORT_INTRA_OP_THREADS: '1',
      BATCH_MAX_TOKENS: '4096',
      BATCH_MAX_SIZE: '8',
      QUEUE_MAX_INPUTS: '100',
      QUEUE_MAX_TOKENS: '9000',
      QUEUE_TENANT_MAX_INPUTS: '50',
      QUEUE_TENANT_MAX_TOKENS: '4000',
      RETRY_AFTER_SECONDS: '3',
      LOG_LEVEL: 'warn',
      // Named, so the default file (.local/metrics-token, made by `make up`) cannot decide the result.
      METRICS_TOKEN: 'embedder-config-test-metrics-token-0123456789',
      EMBEDDER_DRAIN_NOTICE_MS: '2000',
    });
    expect([config.grantSecret.accepted, config.metricsToken?.accepted]).toEqual([
      [GRANT.GRANT_SECRET],
      ['embedder-config-test-metrics-token-0123456789'],
    ]);
    expect({ ...config, grantSecret: 'checked above', metricsToken: 'checked above' }).toEqual({
      host: '0.0.0.0',
      port: 0,
      modelDir: '/m',
      modelId: 'served',
      modelSessions: 3,
      ortIntraOpThreads: 1,
      batchMaxTokens: 4096,
      batchMaxSize: 8,
      queueMaxInputs: 100,
      queueMaxTokens: 9000,
      queueTenantMaxInputs: 50,
      queueTenantMaxTokens: 4000,
      retryAfterSeconds: 3,
      logLevel: 'warn',
      grantSecret: 'checked above',
      settlementTimeoutMs: 250,
      settlementMinReplicas: 0,
      settlementWaitMs: 500,
      drainSeconds: 600,
      drainNoticeMs: 2000,
      otlpEndpoint: undefined,
      metricsToken: 'checked above',
      redis: {
        url: 'redis://redis:6379',
        sentinels: [],
        sentinelName: 'ctg',
        prefix: 'p:',
        timeoutMs: 500,
        username: 'ctg-embedder',
        password: 'pw',
      },
    });
  });

  it('fills the cores with sessions of one thread by default, and with threads where only sessions are given', () => {
    const cores = usableCores();
    const threadsOf = (env: Record<string, string>) => {
      const c = loadConfig({ ...GRANT, ...env });
      return [c.modelSessions, c.ortIntraOpThreads];
    };
    expect(threadsOf({})).toEqual([cores, 1]);
    expect(threadsOf({ MODEL_SESSIONS: '1' })).toEqual([1, cores]);
    // An older setting of threads = cores keeps its one session.
    expect(threadsOf({ ORT_INTRA_OP_THREADS: String(cores) })).toEqual([1, cores]);
    expect(threadsOf({ MODEL_SESSIONS: '2', ORT_INTRA_OP_THREADS: '3' })).toEqual([2, 3]);
    expect(() => loadConfig({ ...GRANT, MODEL_SESSIONS: '0' })).toThrow(/MODEL_SESSIONS/);
  });

  it('names every bad variable in one error', () => {
    let message = '';
    try {
      loadConfig({
        ...GRANT,
        EMBEDDER_PORT: '70000',
        BATCH_MAX_TOKENS: '100',
        BATCH_MAX_SIZE: 'x',
        QUEUE_MAX_INPUTS: '-1',
        QUEUE_TENANT_MAX_TOKENS: '0',
        LOG_LEVEL: 'loud',
      });
    } catch (err) {
      message = (err as Error).message;
    }
    for (const name of [
      'EMBEDDER_PORT',
      'BATCH_MAX_TOKENS',
      'BATCH_MAX_SIZE',
      'QUEUE_MAX_INPUTS',
      'QUEUE_TENANT_MAX_TOKENS',
      'LOG_LEVEL',
    ]) {
      expect(message).toContain(name);
    }
    expect(message).not.toContain('QUEUE_MAX_TOKENS');
  });

  it('runs the Batch API lane on a background session unless told to share the online one', () => {
    const kek = { ...GRANT, BATCH_KEK: 'a'.repeat(64), BATCH_STORE: 'dir:.local/test-config-batch' };
    expect(loadConfig(kek).batch?.session).toBe('background');
    expect(loadConfig({ ...kek, BATCH_SESSION: 'shared' }).batch?.session).toBe('shared');
    expect(loadConfig(kek).batch?.laneRest).toBe(2);
    expect(loadConfig({ ...kek, BATCH_LANE_REST: '0' }).batch?.laneRest).toBe(0);
    expect(() => loadConfig({ ...kek, BATCH_LANE_REST: '11' })).toThrow(/BATCH_LANE_REST/);
    expect(() => loadConfig({ ...kek, BATCH_SESSION: 'idle' })).toThrow(/BATCH_SESSION/);
  });

  it('needs the grant secret it shares with authz, at least 32 characters', () => {
    expect(() => loadConfig({ REDIS_URL_FILE: '/nonexistent', GRANT_SECRET_FILE: '/nonexistent/grant-secret' })).toThrow(
      /GRANT_SECRET \/ GRANT_SECRET_FILE/,
    );
    expect(loadConfig({ ...GRANT, REDIS_CLUSTER_NODES: 'r1:7000' }).redis.clusterNodes).toEqual([{ host: 'r1', port: 7000 }]);
    expect(() => loadConfig({ GRANT_SECRET: 'short' })).toThrow(/GRANT_SECRET: must hold a secret of at least 32 characters/);
  });
});
