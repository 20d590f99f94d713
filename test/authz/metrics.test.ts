/**
 * authz's metrics through the real gRPC server over the real Redis: each Check, store command,
 * usage write and key-cache lookup moves exactly its own series; a Redis outage shows as
 * unavailable Checks, Redis errors, lost usage writes and authz_redis_up 0; GET /metrics serves
 * the exposition on its own listener; and nothing a caller sends becomes a label.
 */
import * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthzMetrics, codeLabel, type AuthzMetrics } from '../../authz/src/telemetry/metrics.js';
import { checkOutcome } from '../../authz/src/telemetry/instrument.js';
import { createMetricsServer, listenMetrics } from '../../authz/src/telemetry/metrics-server.js';
import { metricValue } from '../support/embedder-app.js';
import { envoyCheck, startAuthz, testConfig, type RunningAuthz } from '../support/grpc-authz.js';
import { deadPort } from '../support/redis-proxy.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';
import { fixedSecret } from '../../contract/secrets.js';

const CANARY = `Zebracanary-${randomBytes(4).toString('hex')}`;
const UNKNOWN_KEY = `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`;

/** The value of one sample (0 when the series does not exist yet). */
async function sample(metrics: AuthzMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricValue(await metrics.render(), name, labels) ?? 0;
}

/** How much each watched sample moved while `action` ran. */
async function deltas(
  metrics: AuthzMetrics,
  watched: Array<[string, Record<string, string>]>,
  action: () => Promise<unknown>,
): Promise<number[]> {
  const before = await Promise.all(watched.map(([name, labels]) => sample(metrics, name, labels)));
  await action();
  const after = await Promise.all(watched.map(([name, labels]) => sample(metrics, name, labels)));
  return after.map((value, i) => value - before[i]!);
}

describe('label mapping (pure)', () => {
  it('denial codes come from the catalogue; anything else is "unknown"', () => {
    expect(codeLabel('rate_limit_exceeded')).toBe('rate_limit_exceeded');
    expect(codeLabel(CANARY)).toBe('unknown');
    expect(codeLabel('')).toBe('');
  });

  it('a Check outcome is read from the answer: OK, a denial with its code, or a fault', () => {
    expect(checkOutcome(null, { status: { code: 0 } })).toEqual({ outcome: 'allowed', code: '' });
    expect(checkOutcome(null, { status: { code: 16, message: 'invalid_api_key' } })).toEqual({
      outcome: 'denied',
      code: 'invalid_api_key',
    });
    expect(checkOutcome({ code: grpc.status.UNAVAILABLE }, undefined)).toEqual({ outcome: 'unavailable', code: '' });
    expect(checkOutcome({ code: grpc.status.INTERNAL }, undefined)).toEqual({ outcome: 'error', code: '' });
  });

  it('an unknown denial code is counted as "unknown", never as itself', async () => {
    const metrics = createAuthzMetrics();
    metrics.observeCheck({ outcome: 'denied', code: CANARY, seconds: 0.001 });
    const text = await metrics.render();
    expect(metricValue(text, 'authz_checks_total', { outcome: 'denied', code: 'unknown' })).toBe(1);
    expect(text).not.toContain(CANARY);
  });
});

describe('metrics of a running authz (real gRPC, real Redis)', () => {
  const metrics = createAuthzMetrics();
  let authz: RunningAuthz;
  let key: string;

  beforeAll(async () => {
    authz = await startAuthz(testConfig(testPrefix(), { keyCacheTtlMs: 60_000 }), { metrics });
    metrics.watchRedis(() => authz.store.isReady());
    await addOrg(authz.store, 'acme');
    const added = await addKey(authz.store, 'acme');
    key = `Bearer ${added.key}`;
  });
  afterAll(async () => authz?.stop());

  it('an allowed Check: one allowed, one key lookup from Redis, one rate-limit command', async () => {
    const moved = await deltas(
      metrics,
      [
        ['authz_checks_total', { outcome: 'allowed', code: '' }],
        ['authz_check_duration_seconds_count', { outcome: 'allowed' }],
        ['authz_key_cache_lookups_total', { result: 'miss' }],
        ['authz_key_cache_lookups_total', { result: 'hit' }],
        ['authz_redis_command_duration_seconds_count', { command: 'lookupKey' }],
        ['authz_redis_command_duration_seconds_count', { command: 'checkLimits' }],
        ['authz_redis_errors_total', { command: 'checkLimits' }],
      ],
      () => authz.check(envoyCheck({ authorization: key })),
    );
    expect(moved).toEqual([1, 1, 1, 0, 1, 1, 0]);
  });

  it('the same key again is a key-cache hit: no lookup command reaches Redis', async () => {
    const moved = await deltas(
      metrics,
      [
        ['authz_key_cache_lookups_total', { result: 'hit' }],
        ['authz_key_cache_lookups_total', { result: 'miss' }],
        ['authz_redis_command_duration_seconds_count', { command: 'lookupKey' }],
        ['authz_redis_command_duration_seconds_count', { command: 'checkLimits' }],
      ],
      () => authz.check(envoyCheck({ authorization: key })),
    );
    expect(moved).toEqual([1, 0, 0, 1]);
  });

  it('a denial is counted under its catalogue code, as the client sees it', async () => {
    const response = await authz.check(envoyCheck({ authorization: UNKNOWN_KEY }));
    const code = (JSON.parse(response.denied_response!.body) as { code: string }).code;
    expect(await sample(metrics, 'authz_checks_total', { outcome: 'denied', code })).toBe(1);
    expect(await sample(metrics, 'authz_check_duration_seconds_count', { outcome: 'denied' })).toBe(1);
  });

  it('a Check carries no settlement: the embedder settles on Redis, so authz has no usage series', async () => {
    const text = await metrics.render();
    expect(text).not.toContain('authz_admission_calls_total');
    expect(text).not.toContain('authz_usage_writes_total');
  });

  it('authz_redis_up is 1 while connected', async () => {
    expect(await sample(metrics, 'authz_redis_up')).toBe(1);
  });

  it('nothing the caller sent is a label: key, path, headers and model stay out', async () => {
    await authz.check(
      envoyCheck({ authorization: `Bearer ${CANARY}`, path: `/v1/${CANARY}`, headers: { 'x-gateway-model': CANARY, 'x-canary': CANARY } }),
    );
    await authz.check(envoyCheck({ authorization: key, path: `/v1/embeddings?q=${CANARY}`, headers: { 'x-gateway-model': CANARY } }));
    const text = await metrics.render();
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain(key.slice('Bearer '.length));
    expect(text).not.toContain('acme');
  });
});

describe('metrics while Redis is unreachable', () => {
  it('Checks are unavailable, Redis errors are counted, authz_redis_up is 0', async () => {
    const metrics = createAuthzMetrics();
    const config = testConfig(testPrefix(), { redisUrl: `redis://127.0.0.1:${await deadPort()}`, redisTimeoutMs: 500 });
    const authz = await startAuthz(config, { metrics, waitForRedis: false });
    metrics.watchRedis(() => authz.store.isReady());
    try {
      await expect(authz.check(envoyCheck({ authorization: UNKNOWN_KEY }))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
      expect(await sample(metrics, 'authz_checks_total', { outcome: 'unavailable', code: '' })).toBe(1);
      expect(await sample(metrics, 'authz_redis_errors_total', { command: 'lookupKey' })).toBe(1);
      expect(await sample(metrics, 'authz_redis_up')).toBe(0);
    } finally {
      await authz.stop();
    }
  });
});

describe('GET /metrics on its own listener', () => {
  const metrics = createAuthzMetrics();
  const TOKEN = 'metrics-test-token-0123456789abcdefghijkl';
  const bearer = { headers: { authorization: `Bearer ${TOKEN}` } };
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createMetricsServer(metrics, fixedSecret(TOKEN));
    base = `http://127.0.0.1:${await listenMetrics(server, '127.0.0.1', 0)}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('serves the exposition in Prometheus text format, zero-initialised series included', async () => {
    const res = await fetch(`${base}/metrics`, bearer);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(metricValue(text, 'authz_checks_total', { outcome: 'allowed', code: '' })).toBe(0);
    expect(metricValue(text, 'authz_redis_errors_total', { command: 'checkLimits' })).toBe(0);
    expect(text).toContain('process_cpu_seconds_total');
  });

  it('answers 401 with nothing of the metrics to a caller without the bearer token, on any path', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: TOKEN },
      { authorization: `Basic ${TOKEN}` },
    ]) {
      for (const path of ['/metrics', '/', '/nothing']) {
        const res = await fetch(`${base}${path}`, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(await res.text()).not.toContain('authz_');
      }
    }
  });

  it('answers 404 for any other path and 405 for other methods', async () => {
    expect((await fetch(`${base}/`, bearer)).status).toBe(404);
    expect((await fetch(`${base}/metrics/x`, bearer)).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: 'POST', ...bearer });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('a taken port is an error the caller sees, not a crash', async () => {
    const port = Number(new URL(base).port);
    const second = createMetricsServer(metrics, fixedSecret(TOKEN));
    await expect(listenMetrics(second, '127.0.0.1', port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});
