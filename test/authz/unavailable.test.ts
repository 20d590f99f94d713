import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type { HealthClient } from '../../authz/generated/grpc/health/v1/Health.js';
import { envoyCheck, startAuthz, testConfig, type RunningAuthz } from '../support/grpc-authz.js';
import { deadPort, startRedisProxy } from '../support/redis-proxy.js';
import { connectedStore, testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

const TIMEOUT_MS = 1000;
// Generous: the point is that Check answers at all rather than hanging, not how fast.
const ANSWER_BOUND_MS = 5_000;

/** The gRPC status of a Check, failing the test if none arrives within the bound. */
async function checkStatus(authz: RunningAuthz, authorization: string): Promise<number> {
  const bound = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('Check did not answer')), ANSWER_BOUND_MS).unref());
  try {
    await Promise.race([authz.check(envoyCheck({ authorization })), bound]);
    return grpc.status.OK;
  } catch (error) {
    return (error as grpc.ServiceError).code;
  }
}

function servingStatus(health: HealthClient, service = ''): Promise<string> {
  return new Promise((resolve, reject) =>
    health.Check({ service }, (error, reply) => (error ? reject(error) : resolve(String(reply!.status)))),
  );
}

const someKey = `Bearer CTG_ABCDEFGHIJKL_${'A'.repeat(38)}`;

describe('Redis unavailable: fail closed with UNAVAILABLE', () => {
  it('answers UNAVAILABLE when Redis is at a dead port, and health says NOT_SERVING', async () => {
    const port = await deadPort();
    const authz = await startAuthz(testConfig(testPrefix(), { redisUrl: `redis://127.0.0.1:${port}`, redisTimeoutMs: TIMEOUT_MS }), {
      waitForRedis: false,
    });
    try {
      expect(await checkStatus(authz, someKey)).toBe(grpc.status.UNAVAILABLE);
      expect(await servingStatus(authz.health)).toBe('NOT_SERVING');
    } finally {
      await authz.stop();
    }
  });

  it('answers UNAVAILABLE after the Redis connection is cut mid-test, and when Redis stalls', async () => {
    const prefix = testPrefix();
    const proxy = await startRedisProxy();
    const authz = await startAuthz(testConfig(prefix, { redisUrl: proxy.url, redisTimeoutMs: TIMEOUT_MS }));
    try {
      await addOrg(authz.store, 'acme');
      const { key } = await addKey(authz.store, 'acme');
      expect(await checkStatus(authz, `Bearer ${key}`)).toBe(grpc.status.OK);
      expect(await servingStatus(authz.health, 'envoy.service.auth.v3.Authorization')).toBe('SERVING');
      proxy.stall();
      expect(await checkStatus(authz, `Bearer ${key}`)).toBe(grpc.status.UNAVAILABLE);
      await proxy.stop();
      expect(await checkStatus(authz, `Bearer ${key}`)).toBe(grpc.status.UNAVAILABLE);
      expect(await servingStatus(authz.health)).toBe('NOT_SERVING');
    } finally {
      await authz.stop();
      const cleanup = await connectedStore(prefix);
      await cleanup.purge();
      await cleanup.close();
    }
  });

  it('still answers denials that need no Redis (a malformed key) while Redis is down', async () => {
    const port = await deadPort();
    const authz = await startAuthz(testConfig(testPrefix(), { redisUrl: `redis://127.0.0.1:${port}` }), { waitForRedis: false });
    try {
      const response = await authz.check(envoyCheck({ authorization: 'Bearer nope' }));
      expect(JSON.parse(response.denied_response!.body).code).toBe('malformed_api_key');
    } finally {
      await authz.stop();
    }
  });
});

/** The first status a Watch stream sends for `service`. */
function firstWatched(health: HealthClient, service: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const call = health.Watch({ service });
    call.once('data', (reply: { status: string }) => {
      resolve(String(reply.status));
      call.cancel();
    });
    call.once('error', (error: grpc.ServiceError) => error.code !== grpc.status.CANCELLED && reject(error));
  });
}

describe('health', () => {
  it('answers NOT_FOUND for an unknown service, and Watch streams the status', async () => {
    const authz = await startAuthz(testConfig(testPrefix()));
    try {
      await expect(servingStatus(authz.health, 'no.such.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      expect(await firstWatched(authz.health, '')).toBe('SERVING');
      expect(await firstWatched(authz.health, 'no.such.Service')).toBe('SERVICE_UNKNOWN');
    } finally {
      await authz.stop();
    }
  });
});
