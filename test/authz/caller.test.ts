/**
 * authz answers Check only to the gateway's Envoy: real gRPC calls straight to its port, with
 * and without the caller token Envoy sends as metadata. Health stays open (probes cannot send
 * metadata). A refused caller reaches neither the store nor the handler.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { callerTokenMatches } from '../../authz/src/edge/caller.js';
import { secretDigest } from '../../contract/bearer.js';
import { SecretValues } from '../../contract/secrets.js';
import { createServer } from '../../authz/src/edge/server.js';
import { AUTHZ_CALLER_METADATA } from '../../contract/headers.js';
import { callerMetadata, envoyCheck, startAuthz, testConfig, TEST_CALLER_TOKEN, type RunningAuthz } from '../support/grpc-authz.js';
import { testPrefix } from '../support/redis-store.js';
import { addKey, addOrg } from './fixtures.js';

function rawCheck(authz: RunningAuthz, metadata: grpc.Metadata, authorization: string): Promise<{ code: number; allowed?: boolean }> {
  return new Promise((resolve) => {
    authz.auth.Check(envoyCheck({ authorization }), metadata, { deadline: Date.now() + 10_000 }, (error, response) => {
      resolve(error ? { code: error.code } : { code: grpc.status.OK, allowed: response?.http_response === 'ok_response' });
    });
  });
}

describe('who may call Check (real gRPC, real Redis)', () => {
  const prefix = testPrefix();
  let authz: RunningAuthz;
  let key: string;

  beforeAll(async () => {
    authz = await startAuthz(testConfig(prefix));
    await addOrg(authz.store, 'acme');
    key = `Bearer ${(await addKey(authz.store, 'acme')).key}`;
  });
  afterAll(async () => {
    await authz.store.purge();
    await authz.stop();
  });

  it('allows a valid key only when the call carries the caller token', async () => {
    expect(await rawCheck(authz, callerMetadata(), key)).toEqual({ code: grpc.status.OK, allowed: true });
  });

  it('answers UNAUTHENTICATED to a caller without the token, or with a wrong one, before any lookup', async () => {
    const lookupKey = vi.spyOn(authz.store, 'lookupKey');
    const twice = new grpc.Metadata();
    twice.add(AUTHZ_CALLER_METADATA, TEST_CALLER_TOKEN);
    twice.add(AUTHZ_CALLER_METADATA, TEST_CALLER_TOKEN);
    try {
      for (const metadata of [
        callerMetadata(null),
        callerMetadata(''),
        callerMetadata(`${TEST_CALLER_TOKEN}x`),
        callerMetadata(TEST_CALLER_TOKEN.slice(0, -1)),
        callerMetadata(TEST_CALLER_TOKEN.toUpperCase()),
        twice,
      ]) {
        expect(await rawCheck(authz, metadata, key)).toEqual({ code: grpc.status.UNAUTHENTICATED });
      }
      expect(lookupKey).not.toHaveBeenCalled();
    } finally {
      lookupKey.mockRestore();
    }
  });

  it('keeps grpc.health.v1 open to any caller (Kubernetes probes send no metadata)', async () => {
    const status = await new Promise<string>((resolve, reject) =>
      authz.health.Check({ service: '' }, (error, reply) => (error ? reject(error) : resolve(String(reply!.status)))),
    );
    expect(status).toBe('SERVING');
  });

  it('refuses to build a server without a caller token (fail closed)', () => {
    const config = testConfig(testPrefix(), { callerToken: undefined });
    expect(() => createServer({ config, store: authz.store, log: pino({ level: 'silent' }) })).toThrow(/AUTHZ_CALLER_TOKEN/);
  });

  it('during a rotation accepts the old and the new token; a dropped or never-issued one is refused', async () => {
    const OLD = `${TEST_CALLER_TOKEN}-old`;
    const NEW = `${TEST_CALLER_TOKEN}-new`;
    // Step 1 of deploy/README.md's rotation: the new token added as accepted, Envoy still sends the old.
    const token = new SecretValues([OLD, NEW]);
    const rotating = await startAuthz(testConfig(prefix, { callerToken: token }));
    try {
      expect(await rawCheck(rotating, callerMetadata(OLD), key)).toEqual({ code: grpc.status.OK, allowed: true });
      expect(await rawCheck(rotating, callerMetadata(NEW), key)).toEqual({ code: grpc.status.OK, allowed: true });
      // Step 2 (Envoy sends the new one) changes nothing for authz; step 3 drops the old one,
      // as the file watcher does when the Secret changes (contract/secrets.ts).
      expect(token.update(`${NEW}\n`)).toBe('changed');
      expect(await rawCheck(rotating, callerMetadata(OLD), key)).toEqual({ code: grpc.status.UNAUTHENTICATED });
      expect(await rawCheck(rotating, callerMetadata(NEW), key)).toEqual({ code: grpc.status.OK, allowed: true });
      expect(await rawCheck(rotating, callerMetadata(`${TEST_CALLER_TOKEN}-never-issued`), key)).toEqual({
        code: grpc.status.UNAUTHENTICATED,
      });
    } finally {
      await rotating.stop();
    }
  });

  it('in mesh mode (Istio, AUTHZ_CALLER_AUTH=mesh) answers callers without metadata: the mesh admits them', async () => {
    const mesh = await startAuthz(testConfig(prefix, { callerAuth: 'mesh', callerToken: undefined }));
    try {
      expect(await rawCheck(mesh, callerMetadata(null), key)).toEqual({ code: grpc.status.OK, allowed: true });
    } finally {
      await mesh.stop();
    }
  });
});

describe('callerTokenMatches', () => {
  const expected = [secretDigest(TEST_CALLER_TOKEN)];

  it('matches the token exactly, nothing more or less', () => {
    expect(callerTokenMatches(callerMetadata(), expected)).toBe(true);
    expect(callerTokenMatches(callerMetadata(`${TEST_CALLER_TOKEN} `), expected)).toBe(false);
    expect(callerTokenMatches(callerMetadata(null), expected)).toBe(false);
  });
});
