/**
 * The per-source limit (ENVOY_PER_SOURCE_RPS) in the real Envoy over TLS, with nothing behind
 * it: one source address past its budget gets the catalogue's 429 before ext_authz is asked,
 * another address keeps its own budget, and without the setting there is no such limit.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROBLEM_CONTENT_TYPE } from '../../openapi/problems.js';
import { perSourceLimit, renderEnvoyConfig, settingsFromEnv } from '../../envoy/render.js';
import { expectProblemBody } from '../support/problem-assert.js';
import type { ManagedProcess } from '../support/process.js';
import { makeStackDir, pickPorts, removeStackDir, startEnvoy, type StackPorts } from '../support/stack.js';

const RPS = 2;
const dirs = makeStackDir();
const ca = readFileSync(dirs.caFile);
let ports: StackPorts;
let envoy: ManagedProcess;

/** One POST /v1/embeddings from `localAddress` on a connection of its own. */
function embedFrom(localAddress: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: ports.gateway,
        servername: 'localhost',
        ca,
        localAddress,
        agent: false,
        method: 'POST',
        path: '/v1/embeddings',
        headers: { authorization: `Bearer CTG_ZZZZZZZZZZZZ_${'A'.repeat(38)}`, 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

beforeAll(async () => {
  ports = await pickPorts();
  // No authz: a request the limit lets through fails closed with 503 at ext_authz.
  envoy = await startEnvoy(dirs, ports, 500, { perSourceRps: RPS });
}, 60_000);

afterAll(async () => {
  await envoy?.stop();
  removeStackDir(dirs);
});

describe('the per-source limit', () => {
  it('refuses one source past its burst with 429 rate_limit_exceeded before ext_authz, and not another source', async () => {
    const replies = [];
    for (let i = 0; i < 3 * RPS + 2; i += 1) replies.push(await embedFrom('127.0.0.1'));
    const statuses = replies.map((r) => r.status);
    // A burst of twice the rate passes to ext_authz (503 here: no authz), the rest is refused.
    expect(statuses.slice(0, 2 * RPS)).toEqual(Array(2 * RPS).fill(503));
    expect(statuses.slice(-2)).toEqual([429, 429]);
    const refused = replies.at(-1)!;
    expect(refused.headers['content-type']).toBe(PROBLEM_CONTENT_TYPE);
    expect(refused.headers['retry-after']).toBe('1');
    expectProblemBody(JSON.parse(refused.body), 'rate_limit_exceeded');
    expect((await embedFrom('127.0.0.2')).status).toBe(503);
  });

  it('is absent unless ENVOY_PER_SOURCE_RPS is set, and named when it is not a whole number', () => {
    const base = { TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile };
    const filters = (env: Record<string, string>) => {
      const bootstrap = parse(renderEnvoyConfig(settingsFromEnv(env)));
      return bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters.map(
        (f: { name: string }) => f.name,
      );
    };
    expect(filters(base)).not.toContain('envoy.filters.http.local_ratelimit');
    const limited = filters({ ...base, ENVOY_PER_SOURCE_RPS: '50' });
    // Before ext_authz, and before the new-key budget, which never sees the requests it refuses.
    expect(limited.indexOf('envoy.filters.http.local_ratelimit')).toBe(limited.indexOf('known_keys') - 1);
    expect(limited.indexOf('new_keys')).toBe(limited.indexOf('envoy.filters.http.ext_authz') - 1);
    expect(perSourceLimit(0)).toBe('');
    expect(() => settingsFromEnv({ ...base, ENVOY_PER_SOURCE_RPS: '-1' })).toThrow(/ENVOY_PER_SOURCE_RPS/);
  });
});
