/**
 * The local stack scripts behind `make up` / `make down`, run for real (on free ports, with
 * their state in a temp STACK_DIR instead of .local): up brings the gateway up and says how to
 * use it, a second up changes nothing, the admin CLI works against the stack unchanged, a
 * canary sentence sent through every kind of reply never reaches the logs, a component that
 * dies is restarted, the stack's own Redis is restarted under load without losing an
 * organization, a key or an acknowledged usage record, and down stops exactly what up started.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitFor } from '../support/process.js';
import { manifestModelId, repoRoot } from '../support/stack.js';
import { gatewayRequest, type GatewayRequest } from '../support/stack-client.js';

const run = promisify(execFile);
const stackDir = mkdtempSync(join(tmpdir(), 'ctg-make-up-'));
const modelId = manifestModelId(join(repoRoot, '.local/models/default'));
const CANARY = `Zebracanary ${randomBytes(4).toString('hex')} presents with quixotic dyspnoea`;
const STACK_VARIABLES = new Set([
  'GATEWAY_HOST',
  'GATEWAY_PORT',
  'ENVOY_ADMIN_PORT',
  'EMBEDDER_HOST',
  'EMBEDDER_PORT',
  'AUTHZ_HOST',
  'AUTHZ_PORT',
  'MODEL_DIR',
  'MODEL_ID',
  'KEY_HASH_SECRET',
  'KEY_HASH_SECRET_FILE',
  'TLS_CERT_FILE',
  'TLS_KEY_FILE',
  'STACK_DIR',
  'REDIS_URL',
  'REDIS_URL_FILE',
  'STACK_REDIS_PORT',
  'ENVOY_BIN',
  'AUTHZ_METRICS_PORT',
  'GRANT_SECRET',
  'GRANT_SECRET_FILE',
  'AUTHZ_CALLER_TOKEN',
  'AUTHZ_CALLER_TOKEN_FILE',
  'METRICS_TOKEN',
  'METRICS_TOKEN_FILE',
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_PASSWORD_FILE',
]);
const SERVICES = ['redis', 'authz', 'embedder', 'envoy'];
let env: Record<string, string>;
let upOutput = '';

const script = (name: string) => run('bash', [join(repoRoot, `scripts/stack/${name}.sh`)], { cwd: repoRoot, env, timeout: 300_000 });
const pidOf = (name: string) => Number(readFileSync(join(stackDir, `${name}.pid`), 'utf8'));
const pids = () => Object.fromEntries(SERVICES.map((n) => [n, pidOf(n)]));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
// As a user runs it; only the paths of the secret and of the Redis URL file are given, because
// this stack's state is not in .local (where both are found by default).
const admin = async (...args: string[]) =>
  (
    await run('npm', ['run', '-s', 'admin', '--', ...args], {
      cwd: repoRoot,
      env: { ...env, KEY_HASH_SECRET_FILE: join(stackDir, 'key-hash-secret'), REDIS_URL_FILE: join(stackDir, 'redis-url') },
    })
  ).stdout;
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
    AUTHZ_METRICS_PORT: String(await freePort()),
    // No REDIS_URL: the stack runs its own persistent Redis, here on a free port.
    STACK_REDIS_PORT: String(await freePort()),
    REDIS_KEY_PREFIX: `ctg-e2e-${randomBytes(6).toString('hex')}:`,
  };
  upOutput = (await script('up')).stdout;
}, 300_000);

afterAll(async () => {
  await script('down').catch(() => undefined);
  rmSync(stackDir, { recursive: true, force: true });
});

let key: string | undefined;
async function apiKey(): Promise<string> {
  if (key) return key;
  await admin('org', 'create', 'load-org', '--models', modelId, '--rpm', '100000');
  key = JSON.parse(await admin('key', 'create', '--org', 'load-org', '--json')).key as string;
  return key;
}
const embed = (apiKeyValue: string, id: string) =>
  send({
    method: 'POST',
    path: '/v1/embeddings',
    body: JSON.stringify({ model: modelId, input: 'Afebrile overnight.' }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKeyValue}`, 'x-request-id': id },
  });
const usageIds = async () =>
  new Set(
    (await admin('usage', 'export', '--org', 'load-org', '--format', 'jsonl'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).request_id as string),
  );

describe('make up / make down', () => {
  it('up prints the base URL, the CA path and the two admin commands (the key exported as KEY)', () => {
    expect(upOutput).toContain(`https://localhost:${env.GATEWAY_PORT}`);
    expect(upOutput).toContain(join(stackDir, 'tls/ca.pem'));
    expect(upOutput).toContain(`npm run admin -- org create acme --models ${modelId}`);
    expect(upOutput).toContain(
      `export KEY=$(npm run -s admin -- key create --org acme --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')`,
    );
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
      [
        200,
        {
          method: 'POST',
          path: '/v1/embeddings',
          headers: json,
          body: body({ input: [CANARY, CANARY], input_type: 'query' }),
          http2: true,
        },
      ],
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
    const logs = () =>
      readdirSync(join(stackDir, 'logs'))
        .map((f) => readFileSync(join(stackDir, 'logs', f), 'utf8'))
        .join('\n');
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

  it('runs its own Redis with an append-only file, and authz does not warn about persistence', async () => {
    expect(readFileSync(join(stackDir, 'redis-url'), 'utf8').trim()).toBe(`redis://127.0.0.1:${env.STACK_REDIS_PORT}`);
    const { stdout } = await run('redis-cli', ['-p', env.STACK_REDIS_PORT!, 'CONFIG', 'GET', 'appendonly']);
    expect(stdout.split('\n')[1]).toBe('yes');
    expect(readFileSync(join(stackDir, 'logs/authz.log'), 'utf8')).not.toContain('redis_not_persistent');
  });

  it('restarts a component that dies (kill -9), and the gateway serves again', async () => {
    const before = pidOf('authz');
    process.kill(before, 'SIGKILL');
    await waitFor(
      'a new authz',
      async () => existsSync(join(stackDir, 'authz.pid')) && pidOf('authz') !== before && alive(pidOf('authz')),
      60_000,
    );
    await waitFor('the gateway to authorize again', async () => (await embed(await apiKey(), 'after-authz')).status === 200, 60_000);
    expect(readFileSync(join(stackDir, 'logs/stack.log'), 'utf8')).toMatch(
      /authz exited unexpectedly \(signal SIGKILL\); restarting in \d+ ms/,
    );
  }, 120_000);

  it('Redis killed under load: restarted from its append-only file, no organization, key or acknowledged usage lost', async () => {
    const key = await apiKey();
    const statuses = new Map<string, number>();
    let running = true;
    let restartedAt = Infinity;
    let killedAt = Infinity;
    // Requests sent and answered while Redis was away: each must have failed closed.
    const duringGap: number[] = [];
    const worker = async (w: number) => {
      for (let i = 0; running; i++) {
        const id = `load-${w}-${i}-${randomBytes(3).toString('hex')}`;
        const sentAt = Date.now();
        const res = await embed(key, id).catch(() => ({ status: 0, headers: {} as Record<string, string> }));
        statuses.set(id, res.status);
        if (sentAt > killedAt && Date.now() < restartedAt) duringGap.push(res.status);
        // Fail closed while Redis is away: 503 with retry-after, never a 200 without a Check.
        if (res.status !== 200)
          expect({ status: res.status, retryAfter: res.headers['retry-after'] }).toEqual({ status: 503, retryAfter: '1' });
        if (res.status === 200 && Date.now() > restartedAt) afterRestart.push(id);
      }
    };
    const afterRestart: string[] = [];
    const load = [worker(1), worker(2)];
    await waitFor('some usage to be recorded', async () => (await usageIds()).size >= 3, 30_000);
    const acknowledged = await usageIds();
    const redisPid = pidOf('redis');
    killedAt = Date.now();
    process.kill(redisPid, 'SIGKILL');
    await waitFor(
      'Redis to be restarted',
      async () => existsSync(join(stackDir, 'redis.pid')) && pidOf('redis') !== redisPid && alive(pidOf('redis')),
      30_000,
    );
    restartedAt = Date.now();
    await waitFor('requests to succeed again', async () => afterRestart.length >= 3, 60_000);
    running = false;
    await Promise.all(load);
    // Envoy flushes its access log (the usage path) about once a second.
    await waitFor(
      'usage of the requests after the restart',
      async () => {
        const ids = await usageIds();
        return afterRestart.every((id) => ids.has(id));
      },
      15_000,
    );
    const after = await usageIds();
    for (const id of acknowledged) expect(after.has(id), `usage record ${id} survives`).toBe(true);
    // How many requests fall in the gap depends on how fast the supervisor restarts Redis (none,
    // on a quick machine); every one that did was refused.
    expect(duringGap.every((status) => status === 503)).toBe(true);
    // The organization and the key survived: the same key is still accepted.
    expect(JSON.parse(await admin('org', 'show', 'load-org', '--json'))).toMatchObject({ id: 'load-org' });
    expect((await embed(key, 'after-all')).status).toBe(200);
  }, 180_000);

  it('up after the supervisor itself was killed stops the components it left and starts afresh', async () => {
    const orphans = pids();
    process.kill(pidOf('stack'), 'SIGKILL');
    const { stdout } = await script('up');
    expect(stdout).toContain(`https://localhost:${env.GATEWAY_PORT}`);
    for (const pid of Object.values(orphans)) expect(alive(pid)).toBe(false);
    for (const pid of Object.values(pids())) expect(alive(pid)).toBe(true);
    expect((await embed(await apiKey(), 'after-orphans')).status).toBe(200);
  }, 300_000);

  it('down stops exactly what up started and frees the gateway port', async () => {
    const started = pids();
    await script('down');
    for (const pid of Object.values(started)) expect(alive(pid)).toBe(false);
    for (const name of SERVICES) expect(existsSync(join(stackDir, `${name}.pid`))).toBe(false);
    await expect(send({ path: '/health' })).rejects.toThrow(/ECONNREFUSED/);
  }, 60_000);
});
