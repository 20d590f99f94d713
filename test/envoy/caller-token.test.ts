/**
 * Nothing behind Envoy trusts a bare caller: the real Envoy and the real authz process
 * (authz/src/main.ts) with the stack's secrets. Envoy's Checks carry the caller token and are
 * answered; the same Check sent straight to authz's port without it is refused, health stays
 * open, and authz's /metrics answers only the metrics token. With a token Envoy does not hold,
 * every request fails closed with 503. The token is in no config Envoy's admin shows, and it
 * rotates (deploy/README.md's three steps) while requests are answered, none failed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { protos } from '../../authz/src/edge/protos.js';
import type { AuthorizationClient } from '../../authz/generated/envoy/service/auth/v3/Authorization.js';
import type { HealthClient } from '../../authz/generated/grpc/health/v1/Health.js';
import { AUTHZ_CALLER_METADATA } from '../../contract/headers.js';
import { callerSdsFileFor, renderEnvoyConfig, settingsFromEnv, writeCallerSecret, writeEnvoyConfig } from '../../envoy/render.js';
import { envoyCheck } from '../support/grpc-authz.js';
import { waitFor, type ManagedProcess } from '../support/process.js';
import { deleteRedisKeys, makeStackDir, pickPorts, removeStackDir, startAuthz, startEnvoy, type StackPorts } from '../support/stack.js';
import { gatewayRequest } from '../support/stack-client.js';
import { mistyped } from '../support/mistype.js';

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
  it('renders the token into an SDS file of its own (mode 600), never into the bootstrap; its first line during a rotation', () => {
    const base = { TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile };
    const out = join(dirs.dir, 'render-check', 'envoy.yaml');
    const rotating = join(dirs.dir, 'rotating-token');
    const [first, second] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')];
    writeFileSync(rotating, `${first}\n${second}\n`, { mode: 0o600 });
    writeEnvoyConfig(out, settingsFromEnv({ ...base, AUTHZ_CALLER_TOKEN_FILE: rotating }));
    const bootstrap = readFileSync(out, 'utf8');
    expect(bootstrap).not.toContain(first);
    expect(bootstrap).not.toContain(second);
    const authzCluster = parse(bootstrap).static_resources.clusters.find((c: { name: string }) => c.name === 'authz');
    const options = authzCluster.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
    const injector = options.http_filters[0].typed_config.credential.typed_config;
    expect(injector.header).toBe(AUTHZ_CALLER_METADATA);
    expect(injector.credential.sds_config.path_config_source.path).toBe(callerSdsFileFor(out));
    const sds = readFileSync(callerSdsFileFor(out), 'utf8');
    expect(JSON.parse(sds).resources[0].generic_secret.secret.inline_string).toBe(first);
    expect(sds).not.toContain(second);
    expect(statSync(callerSdsFileFor(out)).mode & 0o777).toBe(0o600);
    // Without a token: no filter, nothing sent (authz refuses every Check).
    const bare = parse(renderEnvoyConfig({ ...settingsFromEnv(base), authzCallerToken: undefined }));
    expect(
      bare.static_resources.clusters.find((c: { name: string }) => c.name === 'authz').typed_extension_protocol_options[
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions'
      ].http_filters,
    ).toBeUndefined();
    expect(() => settingsFromEnv({ ...base, AUTHZ_CALLER_TOKEN_FILE: join(dirs.dir, 'absent') })).toThrow(/AUTHZ_CALLER_TOKEN_FILE/);
    const short = join(dirs.dir, 'short-token');
    writeFileSync(short, 'abc');
    expect(() => writeEnvoyConfig(out, settingsFromEnv({ ...base, AUTHZ_CALLER_TOKEN_FILE: short }))).toThrow(/caller token/);
  });

  it("Envoy's admin shows no secret the stack holds: config_dump (with secrets) names none", async () => {
    const dump = await (await fetch(`http://127.0.0.1:${ports.admin}/config_dump?include_eds`)).text();
    // The caller token's SDS secret is there, redacted.
    expect(dump).toContain('"name": "authz-caller-token"');
    expect(dump).toContain('[redacted]');
    const pemBody = readFileSync(dirs.keyFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('-----'));
    const secrets = [
      ...[
        dirs.callerTokenFile,
        dirs.metricsTokenFile,
        dirs.grantSecretFile,
        dirs.secretFile,
        dirs.batchKekFile,
        dirs.settlementUser.passwordFile,
      ].map(token),
      ...pemBody,
    ];
    expect(secrets.length).toBeGreaterThan(6);
    for (const secret of secrets) expect(dump).not.toContain(secret);
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

  it('rotates with no failed request: add the new token, have Envoy send it, drop the old (deploy/README.md)', async () => {
    const OLD = token(dirs.callerTokenFile);
    const NEW = randomBytes(32).toString('hex');
    const withToken = (value: string) => {
      const metadata = new grpc.Metadata();
      metadata.set(AUTHZ_CALLER_METADATA, value);
      return metadata;
    };
    const replace = (file: string, text: string) => {
      writeFileSync(`${file}.next`, text, { mode: 0o600 });
      renameSync(`${file}.next`, file);
    };
    // Requests through the gateway the whole time: each must reach authz (401 for the unknown key), none 503.
    const refused = async () => {
      const text = await (
        await fetch(`http://127.0.0.1:${ports.authzMetrics}/metrics`, {
          headers: { authorization: `Bearer ${token(dirs.metricsTokenFile)}` },
        })
      ).text();
      return Number(/^authz_callers_refused_total (\d+)/m.exec(text)?.[1]);
    };
    const refusedBefore = await refused();
    // This test's own Checks straight to authz: those refused are the only refusals allowed.
    let probesRefused = 0;
    const probe = async (value: string) => {
      const status = await directCheck(withToken(value));
      if (status === grpc.status.UNAUTHENTICATED) probesRefused += 1;
      return status;
    };
    const statuses: number[] = [];
    let loading = true;
    const load = (async () => {
      while (loading) statuses.push((await embed()).status);
    })();
    try {
      // Step 1: the new token accepted too (authz re-reads its file within 2 s); Envoy still sends the old.
      replace(dirs.callerTokenFile, `${OLD}\n${NEW}\n`);
      await waitFor('authz accepting the new token', async () => (await probe(NEW)) === grpc.status.OK, 15_000);
      // Step 2: Envoy sends the new one from its next Check on (its SDS file re-written, watched).
      const updates = async () => {
        const stats = await (await fetch(`http://127.0.0.1:${ports.admin}/stats?filter=sds`)).text();
        return Number(/sds\.authz-caller-token\.update_success: (\d+)/.exec(stats)?.[1] ?? 0);
      };
      const before = await updates();
      writeCallerSecret(join(dirs.dir, 'authz-caller-token.sds.yaml'), NEW);
      await waitFor('Envoy sending the new token', async () => (await updates()) > before, 15_000);
      // Step 3: the old one dropped; refused from then on.
      replace(dirs.callerTokenFile, `${NEW}\n`);
      await waitFor('authz refusing the old token', async () => (await probe(OLD)) === grpc.status.UNAUTHENTICATED, 15_000);
      const after = statuses.length;
      await waitFor('requests answered after the rotation', async () => statuses.length > after + 5, 15_000);
    } finally {
      loading = false;
      await load;
    }
    expect(await directCheck(withToken(NEW))).toBe(grpc.status.OK);
    // Envoy's Checks were never refused: the only refusals are this test's own probes.
    expect((await refused()) - refusedBefore).toBe(probesRefused);
    expect(await directCheck(withToken(mistyped(NEW)))).toBe(grpc.status.UNAUTHENTICATED);
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((status) => status !== 401)).toEqual([]);
  }, 90_000);

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
