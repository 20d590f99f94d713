/**
 * authz behind the mesh's Envoy (Istio mode, deploy/istio): a real Envoy configured as Istio
 * configures an ingress gateway for a CUSTOM envoyExtAuthzGrpc provider (istio-envoy.ts), in
 * front of real authz and embedder processes and the real Redis. None of the project's Envoy
 * filters run there, so every decision must come from what Istio sends: headers only by
 * default, the body too with includeRequestBodyInCheck. Same stance as the project's gateway:
 * fail closed, no model bypass, client-sent identity headers grant nothing.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADERS } from '../../contract/headers.js';
import { freePort, startProcess, waitFor, type ManagedProcess } from '../support/process.js';
import {
  deleteRedisKeys,
  envoyBinary,
  makeStackDir,
  manifestModelId,
  pickPorts,
  redisUrl,
  removeStackDir,
  repoRoot,
  startAuthz,
  startEmbedder,
  type ServiceEnv,
  type StackDir,
  type StackPorts,
} from '../support/stack.js';
import { adminFor, type Admin } from './admin.js';
import { istioLikeBootstrap } from './istio-envoy.js';

const MODES = [
  { name: 'headers only', includeBody: false },
  { name: 'includeRequestBodyInCheck', includeBody: true },
] as const;

let dirs: StackDir;
let ports: StackPorts;
let svc: ServiceEnv;
const processes: ManagedProcess[] = [];
let authz: ManagedProcess;
let admin: Admin;
const listeners: Record<string, number> = {};
const admins: Record<string, number> = {};
let withModel: { org: string; key: string };
let otherWithModel: { org: string; key: string };
let withoutModel: { org: string; key: string };

async function startIstioLikeEnvoy(name: string, includeBody: boolean): Promise<void> {
  const listenerPort = await freePort();
  const adminPort = await freePort();
  const config = join(dirs.dir, `${name}.json`);
  writeFileSync(config, istioLikeBootstrap({ listenerPort, adminPort, authzPort: ports.authz, embedderPort: ports.embedder, includeBody }));
  const envoy = startProcess({
    name,
    command: envoyBinary(),
    env: {},
    logFile: join(dirs.logDir, `${name}.log`),
    // One worker: the new-key budget learns keys per worker, and the tests below know which.
    args: ['-c', config, '--disable-hot-restart', '--log-level', 'warn', '--base-id', String(listenerPort), '--concurrency', '1'],
  });
  processes.push(envoy);
  await waitFor(`${name} to be LIVE`, async () => (await fetch(`http://127.0.0.1:${adminPort}/ready`)).ok, 30_000, [envoy]);
  listeners[name] = listenerPort;
  admins[name] = adminPort;
}

beforeAll(async () => {
  dirs = makeStackDir();
  ports = await pickPorts();
  // The generated test model: this suite is about decisions, not vectors.
  const modelDir = join(repoRoot, '.local/models/test');
  svc = { modelDir, modelId: manifestModelId(modelDir), redisKeyPrefix: `ctg-e2e-${randomBytes(6).toString('hex')}:` };
  // The embedder runs as its own Redis user, allowed only the settlement functions (as
  // deployed); authz creates it (EMBEDDER_REDIS_USERNAME, stack.ts).
  const embedder = startEmbedder(dirs, ports, svc, { BATCH_POLL_MS: '50' });
  // Istio's ext_authz provider sends no metadata: the mesh admits only its gateway to authz.
  authz = await startAuthz(dirs, ports, svc, { AUTHZ_CALLER_AUTH: 'mesh' });
  processes.push(authz);
  processes.push(await embedder);
  for (const mode of MODES) await startIstioLikeEnvoy(mode.name, mode.includeBody);
  admin = adminFor(dirs, svc);
  withModel = admin.orgWithKey('istio-with', [svc.modelId]);
  otherWithModel = admin.orgWithKey('istio-other', [svc.modelId]);
  withoutModel = admin.orgWithKey('istio-without', ['some-other-model']);
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  if (svc) deleteRedisKeys(svc.redisKeyPrefix);
  if (dirs) spawnSync('redis-cli', ['-u', redisUrl, 'ACL', 'DELUSER', dirs.settlementUser.username]);
  if (dirs) removeStackDir(dirs);
});

function embed(mode: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`http://127.0.0.1:${listeners[mode]}/v1/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: svc.modelId, input: 'Patient denies chest pain.' }),
  });
}

const bearer = (k: { key: string }) => ({ authorization: `Bearer ${k.key}` });

function usageOf(org: string): { requests: number } {
  return JSON.parse(admin.run(['usage', '--org', org, '--json'])) as { requests: number };
}

describe.each(MODES)('through an Istio-shaped ingress Envoy ($name)', ({ name }) => {
  it('GET /health needs no key (outside the policy)', async () => {
    const res = await fetch(`http://127.0.0.1:${listeners[name]}/health`);
    expect(res.status).toBe(200);
  });

  it('a valid key of an organization with the model gets 200', async () => {
    const res = await embed(name, bearer(withModel));
    expect(res.status).toBe(200);
    expect((await res.json()).data).toHaveLength(1);
  });

  it('no key gets 401 missing_api_key from authz', async () => {
    const res = await embed(name, {});
    expect(res.status).toBe(401);
    expect((await res.json()).code).toBe('missing_api_key');
  });

  it('an organization without the model gets 403, not the model', async () => {
    const res = await embed(name, bearer(withoutModel));
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe('model_not_enabled');
  });

  it('client-sent identity headers grant nothing', async () => {
    const forged = { [IDENTITY_HEADERS.org]: withModel.org, [IDENTITY_HEADERS.model]: svc.modelId, [IDENTITY_HEADERS.key]: 'forged' };
    // Without a key, forged identity is still no identity.
    expect((await embed(name, forged)).status).toBe(401);
    // With the key of an organization lacking the model, forging a granted one does not help.
    const res = await embed(name, { ...bearer(withoutModel), ...forged });
    expect(res.status).toBe(403);
  });
});

describe('the other public paths, routed by the shipped VirtualService', () => {
  const url = (path: string) => `http://127.0.0.1:${listeners[MODES[0].name]}${path}`;
  const get = (path: string, k?: { key: string }) => fetch(url(path), { headers: k ? bearer(k) : {} });

  it("GET /v1/models lists the organization's models, behind the key check", async () => {
    const res = await get('/v1/models', withModel);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([svc.modelId]);
    expect((await get(`/v1/models/${svc.modelId}`, withModel)).status).toBe(200);
    expect((await get('/v1/models')).status).toBe(401);
  });

  it('the Batch API runs a file through: upload, create, complete, download, delete', async () => {
    const lines = ['a', 'b'].map((id) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: svc.modelId, input: `note ${id}` } }),
    );
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${lines.join('\n')}\n`], { type: 'application/jsonl' }), 'notes.jsonl');
    const upload = await fetch(url('/v1/files'), { method: 'POST', headers: bearer(withModel), body: form });
    expect(upload.status).toBe(200);
    const file = (await upload.json()) as { id: string };
    const create = await fetch(url('/v1/batches'), {
      method: 'POST',
      headers: { ...bearer(withModel), 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }),
    });
    expect(create.status).toBe(200);
    const batch = (await create.json()) as { id: string };
    let done: { status: string; output_file_id: string } | undefined;
    await waitFor(
      'the batch to complete',
      async () => {
        done = (await (await get(`/v1/batches/${batch.id}`, withModel)).json()) as typeof done;
        return done?.status === 'completed';
      },
      60_000,
    );
    const output = await get(`/v1/files/${done!.output_file_id}/content`, withModel);
    expect(output.status).toBe(200);
    const ids = (await output.text())
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
    expect(ids.sort()).toEqual(['a', 'b']);
    // Another organization's key sees neither the batch nor the file; the owner deletes the file.
    expect((await get(`/v1/batches/${batch.id}`, otherWithModel)).status).toBe(404);
    expect((await fetch(url(`/v1/files/${file.id}`), { method: 'DELETE', headers: bearer(withModel) })).status).toBe(200);
    expect((await get(`/v1/files/${file.id}`, withModel)).status).toBe(404);
  });

  it('a keyless upload is refused on its headers; internal paths are not routed', async () => {
    expect((await fetch(url('/v1/files'), { method: 'POST', body: 'x'.repeat(1024) })).status).toBe(401);
    for (const path of ['/ready', '/metrics']) expect((await get(path, withModel)).status, path).toBe(404);
  });
});

describe('usage, recorded by the embedder', () => {
  it("is recorded for the key's organization, never for one named in a forged header", async () => {
    const before = usageOf(otherWithModel.org).requests;
    const forgedBefore = usageOf(withModel.org).requests;
    const res = await embed(MODES[0].name, { ...bearer(otherWithModel), [IDENTITY_HEADERS.org]: withModel.org });
    expect(res.status).toBe(200);
    await waitFor('the usage record', async () => usageOf(otherWithModel.org).requests === before + 1, 15_000);
    expect(usageOf(withModel.org).requests).toBe(forgedBefore);
  });
});

describe("the gateway's own replies (edge-filter.yaml)", () => {
  const mode = MODES[0].name;
  const junk = async (i: number, extra: Record<string, string> = {}) => {
    const res = await embed(mode, { authorization: `Bearer sk-junk-${i}`, ...extra });
    return { status: res.status, code: ((await res.json()) as { code: string }).code, retryAfter: res.headers.get('retry-after') };
  };

  it("a path no route serves is the catalogue's 404, unchecked like /health", async () => {
    const res = await fetch(`http://127.0.0.1:${listeners[mode]}/health`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe('not_found');
  });

  it('the new-key budget holds a junk-key flood back before authz, while a key in use passes', async () => {
    expect((await embed(mode, bearer(withModel))).status).toBe(200); // the one worker now knows the key
    const before = await newKeyRefusals(mode);
    // 150 junk keys at once from one address: its share (10 a second, bursts of 20) reaches authz.
    const flood = await Promise.all(Array.from({ length: 150 }, (_, i) => junk(i)));
    const refused = flood.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(100);
    expect(new Set(refused.map((r) => `${r.code} ${r.retryAfter}`))).toEqual(new Set(['authorization_unavailable 1']));
    expect(flood.filter((r) => r.status === 401).length).toBe(150 - refused.length);
    expect((await newKeyRefusals(mode)) - before).toBe(refused.length);
    // A key authz accepted before is not held back by the empty budget.
    expect((await embed(mode, bearer(withModel))).status).toBe(200);
    // A client's own mark opens nothing: the filter drops it and marks the request itself.
    const marked = await Promise.all(Array.from({ length: 60 }, (_, i) => junk(1000 + i, { 'x-gateway-new-key': '0' })));
    // The address's bucket holds at most 20 (its burst), and refills 10 a second: most wait.
    expect(marked.filter((r) => r.status === 503).length).toBeGreaterThanOrEqual(30);
  });
});

/** Requests the new-key budget refused on the named Envoy, from its admin stats. */
async function newKeyRefusals(name: string): Promise<number> {
  const stats = await (await fetch(`http://127.0.0.1:${admins[name]}/stats?filter=new_keys.http_local_rate_limit.rate_limited`)).text();
  return Number(/: (\d+)/.exec(stats)?.[1] ?? 'NaN');
}

describe('authz unreachable', () => {
  it.each(MODES)('fails closed ($name): 503 with the problem body, never the model', async ({ name }) => {
    await authz.stop(1_000); // SIGKILL after 1 s: an open access-log stream would hold a graceful stop for 5 s
    const res = await embed(name, bearer(withModel));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { code: string }).code).toBe('authorization_unavailable');
  });
});
