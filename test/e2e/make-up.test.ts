/**
 * The local stack scripts behind `make up` / `make down`, run for real (on free ports, with
 * their state in a temp STACK_DIR instead of .local): up brings the gateway up and says how to
 * use it, a second up changes nothing, the admin CLI works against the stack unchanged, a
 * canary sentence sent through every kind of reply never reaches the logs, and down stops
 * exactly the processes up started.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitFor } from '../support/process.js';
import { deleteRedisKeys, manifestModelId, repoRoot } from '../support/stack.js';
import { gatewayRequest, type GatewayRequest } from '../support/stack-client.js';

const run = promisify(execFile);
const stackDir = mkdtempSync(join(tmpdir(), 'ctg-make-up-'));
const modelId = manifestModelId(join(repoRoot, '.local/models/default'));
const CANARY = `Zebracanary ${randomBytes(4).toString('hex')} presents with quixotic dyspnoea`;
const STACK_VARIABLES = new Set([
  'GATEWAY_HOST', 'GATEWAY_PORT', 'ENVOY_ADMIN_PORT', 'EMBEDDER_HOST', 'EMBEDDER_PORT', 'AUTHZ_HOST', 'AUTHZ_PORT',
  'MODEL_DIR', 'MODEL_ID', 'KEY_HASH_SECRET', 'KEY_HASH_SECRET_FILE', 'TLS_CERT_FILE', 'TLS_KEY_FILE', 'STACK_DIR',
]);
let env: Record<string, string>;
let upOutput = '';

const script = (name: string) => run('bash', [join(repoRoot, `scripts/stack/${name}.sh`)], { cwd: repoRoot, env, timeout: 300_000 });
const pids = () => Object.fromEntries(['authz', 'embedder', 'envoy'].map((n) => [n, Number(readFileSync(join(stackDir, `${n}.pid`), 'utf8'))]));
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
// As a user runs it; only the secret's path is given, because this stack's state is not in .local.
const admin = async (...args: string[]) => (await run('npm', ['run', '-s', 'admin', '--', ...args], {
  cwd: repoRoot, env: { ...env, KEY_HASH_SECRET_FILE: join(stackDir, 'key-hash-secret') },
})).stdout;
const send = (req: GatewayRequest) =>
  gatewayRequest({ host: 'localhost', port: Number(env.GATEWAY_PORT), ca: readFileSync(join(stackDir, 'tls/ca.pem')) }, req);

beforeAll(async () => {
  // The stack's settings come only from here (an inherited TLS_CERT_FILE or MODEL_ID would
  // point this stack at another one's files).
  const inherited = Object.entries(process.env).filter(([name]) => !STACK_VARIABLES.has(name));
  env = {
    ...(Object.fromEntries(inherited) as Record<string, string>),
    STACK_DIR: stackDir,
    STACK_SKIP_INSTALL: '1',
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(await freePort()),
    ENVOY_ADMIN_PORT: String(await freePort()),
    EMBEDDER_PORT: String(await freePort()),
    AUTHZ_PORT: String(await freePort()),
    REDIS_KEY_PREFIX: `ctg-e2e-${randomBytes(6).toString('hex')}:`,
  };
  upOutput = (await script('up')).stdout;
}, 300_000);

afterAll(async () => {
  await script('down').catch(() => undefined);
  deleteRedisKeys(env.REDIS_KEY_PREFIX!);
  rmSync(stackDir, { recursive: true, force: true });
});

describe('make up / make down', () => {
  it('up prints the base URL, the CA path and the two admin commands', () => {
    expect(upOutput).toContain(`https://localhost:${env.GATEWAY_PORT}`);
    expect(upOutput).toContain(join(stackDir, 'tls/ca.pem'));
    expect(upOutput).toContain(`npm run admin -- org create acme --models ${modelId}`);
    expect(upOutput).toContain('npm run admin -- key create --org acme --json');
    for (const pid of Object.values(pids())) expect(alive(pid)).toBe(true);
  });

  it('a second up is a no-op: the same processes keep running', async () => {
    const before = pids();
    await script('up');
    expect(pids()).toEqual(before);
  }, 300_000);

  it('the admin CLI works against the running stack; a canary sentence never reaches the logs', async () => {
    await admin('org', 'create', 'canary-org', '--models', modelId);
    const key = JSON.parse(await admin('key', 'create', '--org', 'canary-org', '--json')).key as string;
    const json = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const body = (extra: Record<string, unknown>) => JSON.stringify({ model: modelId, input: CANARY, ...extra });
    const requests: Array<[number, GatewayRequest]> = [
      [200, { method: 'POST', path: '/v1/embeddings', headers: json, body: body({}) }],
      [200, { method: 'POST', path: '/v1/embeddings', headers: json, body: body({ input: [CANARY, CANARY], input_type: 'query' }), http2: true }],
      [400, { method: 'POST', path: '/v1/embeddings', headers: json, body: body({ input_type: CANARY }) }],
      [400, { method: 'POST', path: '/v1/embeddings', headers: json, body: body({ input: `${CANARY} `.repeat(80) }) }],
      [400, { method: 'POST', path: '/v1/embeddings', headers: { ...json, 'content-type': 'text/plain' }, body: body({}) }],
      [400, { method: 'POST', path: '/v1/embeddings', headers: json, body: `{"model": "${modelId}", "input": "${CANARY}` }],
      [401, { method: 'POST', path: '/v1/embeddings', headers: { 'content-type': 'application/json' }, body: body({}) }],
      [403, { method: 'POST', path: '/v1/embeddings', headers: json, body: JSON.stringify({ model: 'other-model', input: CANARY }) }],
      [404, { method: 'POST', path: '/v1/other', headers: json, body: body({}) }],
      [405, { method: 'PUT', path: '/v1/embeddings', headers: json, body: body({}) }],
      [413, { method: 'POST', path: '/v1/embeddings', headers: json, body: body({ user: CANARY.repeat(30_000) }) }],
    ];
    const ids: string[] = [];
    for (const [i, [status, req]] of requests.entries()) {
      const id = `canary-${i}-${randomBytes(3).toString('hex')}`;
      ids.push(id);
      const res = await send({ ...req, headers: { ...req.headers, 'x-request-id': id } });
      expect(res.status, `${req.method} ${req.path}: ${res.body.slice(0, 200)}`).toBe(status);
      expect(res.body).not.toContain(CANARY);
    }
    const logs = () => readdirSync(join(stackDir, 'logs')).map((f) => readFileSync(join(stackDir, 'logs', f), 'utf8')).join('\n');
    // The logs do cover these requests (Envoy flushes its access log about once a second) …
    await waitFor('the access log to list every canary request', async () => ids.every((id) => logs().includes(id)), 15_000);
    // x-request-id reached the embedder (its own log names the first request) …
    expect(readFileSync(join(stackDir, 'logs/embedder.log'), 'utf8')).toContain(ids[0]);
    // … and the logs hold none of the text, in any case.
    const all = logs().toLowerCase();
    expect(all).not.toContain(CANARY.toLowerCase());
    expect(all).not.toContain('zebracanary');
    expect(all).not.toContain('quixotic');
  }, 120_000);

  it('down stops exactly what up started and frees the gateway port', async () => {
    const started = pids();
    await script('down');
    for (const pid of Object.values(started)) expect(alive(pid)).toBe(false);
    for (const name of ['authz', 'embedder', 'envoy']) expect(existsSync(join(stackDir, `${name}.pid`))).toBe(false);
    await expect(send({ path: '/health' })).rejects.toThrow(/ECONNREFUSED/);
  }, 60_000);
});
