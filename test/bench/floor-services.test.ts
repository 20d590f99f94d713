/**
 * The frameworks' floor (bench/floor-services.ts, measured by `bench/envoy-ab.ts --b-floor`)
 * stands for authz and the embedder only if Envoy gets from it what it gets from them: an allowed
 * Check of the real one's shape (the grant, identity and rate-limit headers, `authorization`
 * removed), a SERVING health answer, and, for every embeddings request, its JSON body parsed and
 * one fixed real response sent back byte for byte.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import type { CheckResponse__Output } from '../../authz/generated/envoy/service/auth/v3/CheckResponse.js';
import type { HealthClient } from '../../authz/generated/grpc/health/v1/Health.js';
import type { HealthCheckResponse__Output } from '../../authz/generated/grpc/health/v1/HealthCheckResponse.js';
import { protos } from '../../authz/src/edge/protos.js';
import { GRANT_HEADER, IDENTITY_HEADERS } from '../../contract/headers.js';
import { freePort } from '../../scripts/free-port.js';
import { httpOk, tcpOpen, waitFor } from '../../scripts/stack/probes.js';
import { callerMetadata, envoyCheck, headerMap } from '../support/grpc-authz.js';

const children: ChildProcess[] = [];
let authzAddress: string;
let embedderUrl: string;
const body = Buffer.from(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }] }));

function start(args: string[]): void {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/floor-services.ts', ...args], { stdio: 'inherit' });
  children.push(child);
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'floor-'));
  writeFileSync(join(dir, 'body.json'), body);
  const [authzPort, embedderPort] = [await freePort(), await freePort()];
  start(['authz', String(authzPort)]);
  start(['embedder', String(embedderPort), join(dir, 'body.json')]);
  authzAddress = `127.0.0.1:${authzPort}`;
  embedderUrl = `http://127.0.0.1:${embedderPort}`;
  await waitFor('the floor authz', tcpOpen('127.0.0.1', authzPort), 30_000);
  await waitFor('the floor embedder', httpOk(`${embedderUrl}/ready`), 30_000);
}, 60_000);

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** A call as Envoy's ext_authz makes it, on the project's typed clients. */
function call<T>(invoke: (done: (error: grpc.ServiceError | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => invoke((error, value) => (error || !value ? reject(error) : resolve(value))));
}

describe('the floor authz', () => {
  const loaded = protos();
  const credentials = grpc.credentials.createInsecure();

  it('allows every Check with the headers the real authz sends, and removes authorization', async () => {
    const auth = new loaded.envoy.service.auth.v3.Authorization(authzAddress, credentials) as AuthorizationClient;
    try {
      const response = await call<CheckResponse__Output>((done) =>
        auth.Check(envoyCheck({ authorization: 'Bearer CTG_anything' }), callerMetadata(), done),
      );
      expect(response.status?.code).toBe(0);
      const headers = headerMap(response.ok_response?.headers);
      expect(Object.keys(headers).sort()).toEqual(
        [GRANT_HEADER, IDENTITY_HEADERS.key, IDENTITY_HEADERS.model, IDENTITY_HEADERS.org].sort(),
      );
      // A signed grant as contract/grant.ts writes it: version, claims, MAC.
      expect(headers[GRANT_HEADER]).toMatch(/^[^.]+\.[A-Za-z0-9_-]{100,}\.[A-Za-z0-9_-]{40,}$/);
      expect(response.ok_response?.headers_to_remove).toEqual(['authorization']);
      expect(Object.keys(headerMap(response.ok_response?.response_headers_to_add))).toEqual([
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
      ]);
    } finally {
      auth.close();
    }
  });

  it('says SERVING to the gRPC health check Envoy sends', async () => {
    const health = new loaded.grpc.health.v1.Health(authzAddress, credentials) as HealthClient;
    try {
      expect((await call<HealthCheckResponse__Output>((done) => health.Check({}, done))).status).toBe('SERVING');
    } finally {
      health.close();
    }
  });
});

describe('the floor embedder', () => {
  it('parses the JSON body and answers the fixed response byte for byte', async () => {
    const ok = await fetch(`${embedderUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'text' }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/json');
    expect(Buffer.from(await ok.arrayBuffer()).equals(body)).toBe(true);
    // The body is parsed, as the real embedder's is: a broken one never reaches the handler.
    const broken = await fetch(`${embedderUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"input": ',
    });
    expect(broken.status).toBe(400);
  });
});
