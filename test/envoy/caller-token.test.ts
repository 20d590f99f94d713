/**
 * Nothing behind Envoy trusts a bare caller: the real Envoy and the real authz process
 * (authz/src/main.ts) with the stack's secrets. Envoy's Checks carry the caller token and are
 * answered; the same Check sent straight to authz's port without it is refused, health stays
 * open, and authz's /metrics answers only the metrics token. With a token Envoy does not hold,
 * every request fails closed with 503.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { protos } from '../../authz/src/edge/protos.js';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import type { HealthClient } from '../../authz/generated/grpc/health/v1/Health.js';
import { AUTHZ_CALLER_METADATA } from '../../contract/headers.js';
import { renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';
import { envoyCheck } from '../support/grpc-authz.js';
import { waitFor, type ManagedProcess } from '../support/process.js';
import { deleteRedisKeys, makeStackDir, pickPorts, removeStackDir, startAuthz, startEnvoy, type StackPorts } from '../support/stack.js';
import { gatewayRequest } from '../support/stack-client.js';

const dirs = makeStackDir();
const ca = readFileSync(dirs.caFile);
const svc = { modelDir: '', modelId: 'test-model', redisKeyPrefix: `ctg-envoy-${randomBytes(6).toString('hex')}:` };
const UNKNOWN_KEY = `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`;
const token = (file: string) => readFileSync(file, 'utf8').trim();
let ports: StackPorts;
let envoy: ManagedProcess;
let authz: ManagedProcess;

const embed = () =>
  gatewayRequest(
    { host: 'localhost', port: ports.gateway, ca },
    {
      method: 'POST',
      path: '/v1/embeddings',
      headers: { authorization: UNKNOWN_KEY, 'content-type': 'application/json' },
      body: '{}',
    },
  );

function directCheck(metadata: grpc.Metadata): Promise<number> {
  const client = new (protos().envoy.service.auth.v3.Authorization)(
    `127.0.0.1:${ports.authz}`,
    grpc.credentials.createInsecure(),
  ) as AuthorizationClient;
  return new Promise((resolve) => {
    client.Check(envoyCheck({ authorization: UNKNOWN_KEY }), metadata, { deadline: Date.now() + 10_000 }, (error) => {
      client.close();
      resolve(error ? error.code : grpc.status.OK);
    });
  });
}

beforeAll(async () => {
  ports = await pickPorts();
  authz = await startAuthz(dirs, ports, svc);
  envoy = await startEnvoy(dirs, ports);
}, 60_000);

afterAll(async () => {
  await envoy?.stop();
  await authz?.stop();
  deleteRedisKeys(svc.redisKeyPrefix);
  removeStackDir(dirs);
});

describe('the caller token between Envoy and authz', () => {
  it('renders the token into ext_authz initial_metadata, and only when there is one', () => {
    const base = { TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile };
    const grpcService = (env: Record<string, string>) => {
      const bootstrap = parse(renderEnvoyConfig(settingsFromEnv(env)));
      const filters = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters;
      return filters.find((f: { name: string }) => f.name === 'envoy.filters.http.ext_authz').typed_config.grpc_service;
    };
    expect(grpcService({ ...base, AUTHZ_CALLER_TOKEN_FILE: dirs.callerTokenFile }).initial_metadata).toEqual([
      { key: AUTHZ_CALLER_METADATA, value: token(dirs.callerTokenFile) },
    ]);
    expect(() => settingsFromEnv({ ...base, AUTHZ_CALLER_TOKEN_FILE: join(dirs.dir, 'absent') })).toThrow(/AUTHZ_CALLER_TOKEN_FILE/);
    const short = join(dirs.dir, 'short-token');
    writeFileSync(short, 'abc');
    expect(() => renderEnvoyConfig(settingsFromEnv({ ...base, AUTHZ_CALLER_TOKEN_FILE: short }))).toThrow(/caller token/);
  });

  it("Envoy's Checks are answered: an unknown key gets authz's 401, not a 503", async () => {
    const res = await embed();
    expect(res.status).toBe(401);
    expect(res.json().code).toBe('invalid_api_key');
  });

  it('a Check straight to authz is UNAUTHENTICATED without the token or with a wrong one, answered with it', async () => {
    const none = new grpc.Metadata();
    const wrong = new grpc.Metadata();
    wrong.set(AUTHZ_CALLER_METADATA, randomBytes(32).toString('hex'));
    const right = new grpc.Metadata();
    right.set(AUTHZ_CALLER_METADATA, token(dirs.callerTokenFile));
    expect(await directCheck(none)).toBe(grpc.status.UNAUTHENTICATED);
    expect(await directCheck(wrong)).toBe(grpc.status.UNAUTHENTICATED);
    expect(await directCheck(right)).toBe(grpc.status.OK);
  });

  it('health answers a caller without metadata, as the Kubernetes gRPC probe is', async () => {
    const health = new (protos().grpc.health.v1.Health)(`127.0.0.1:${ports.authz}`, grpc.credentials.createInsecure()) as HealthClient;
    const status = await new Promise<string>((resolve, reject) =>
      health.Check({ service: '' }, (error, reply) => (error ? reject(error) : resolve(String(reply!.status)))),
    );
    health.close();
    expect(['SERVING', 'NOT_SERVING']).toContain(status);
  });

  it("authz's /metrics answers 401 without the metrics token and 200 with it", async () => {
    const url = `http://127.0.0.1:${ports.authzMetrics}/metrics`;
    const without = await fetch(url);
    expect(without.status).toBe(401);
    expect(await without.text()).not.toContain('authz_checks_total');
    const wrong = await fetch(url, { headers: { authorization: `Bearer ${token(dirs.callerTokenFile)}` } });
    expect(wrong.status).toBe(401);
    const right = await fetch(url, { headers: { authorization: `Bearer ${token(dirs.metricsTokenFile)}` } });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain('authz_checks_total');
  });

  it('with a token Envoy does not hold, every Check fails closed: 503 authorization_unavailable', async () => {
    const other = join(dirs.dir, 'other-caller-token');
    writeFileSync(other, randomBytes(32).toString('hex'), { mode: 0o600 });
    await authz.stop();
    authz = await startAuthz(dirs, ports, svc, { AUTHZ_CALLER_TOKEN_FILE: other });
    // Only once Envoy counts authz healthy again is a 503 the token's doing, not a missing host.
    await waitFor(
      'authz healthy in Envoy',
      async () => /authz::[^\n]*::health_flags::healthy/.test(await (await fetch(`http://127.0.0.1:${ports.admin}/clusters`)).text()),
      15_000,
    );
    const res = await embed();
    expect(res.status).toBe(503);
    expect(res.json().code).toBe('authorization_unavailable');
  });
});
