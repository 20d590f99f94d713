/**
 * The gateway pod as the manifests define it, with the real Envoy 1.40: the init container's
 * render (envoy/render.ts with the overlay's settings) gives a bootstrap Envoy accepts with the
 * pod's own flags, and the preStop hook (deploy/gateway/drain.sh) drains that Envoy: replies
 * during the drain close their connections, so clients move to other replicas.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startProcess, waitFor, type ManagedProcess } from '../support/process.js';
import { envoyBinary, makeStackDir, removeStackDir, repoRoot, type StackDir } from '../support/stack.js';
import { Agent, get } from 'node:https';
import { find, parseObjects, renderOverlay } from './kustomize.js';

const objects = parseObjects(renderOverlay('production'));
const pod = find(objects, 'Deployment', 'ctg-gateway').spec.template.spec;
const renderContainer = pod.initContainers.find((c: any) => c.name === 'render-config');
const envoyContainer = pod.containers.find((c: any) => c.name === 'envoy');
const drainScript = join(repoRoot, 'deploy/gateway/drain.sh');
let dirs: StackDir;
let envoy: ManagedProcess | undefined;

beforeAll(() => {
  dirs = makeStackDir();
});

afterAll(async () => {
  await envoy?.stop();
  removeStackDir(dirs);
});

/** Runs the init container's command here, with its settings; `overrides` stand in for the cluster. */
function renderAsInitContainer(file: string, overrides: Record<string, string>): string {
  const settings = find(objects, 'ConfigMap', 'ctg-gateway-render-env').data!;
  const [node, ...args] = renderContainer.command as string[];
  expect(node).toBe('node');
  execFileSync(process.execPath, [...args.slice(0, -1), file], {
    cwd: repoRoot, stdio: 'pipe',
    env: {
      PATH: process.env.PATH ?? '', ...settings,
      // The service-link addresses and the mounted certificate exist only in the cluster.
      AUTHZ_HOST: '127.0.0.1', EMBEDDER_HOST: '127.0.0.1', TLS_CERT_FILE: dirs.certFile, TLS_KEY_FILE: dirs.keyFile,
      ...overrides,
    },
  });
  return readFileSync(file, 'utf8');
}

/** GET over a keep-alive HTTP/1.1 connection (the client asks for no close itself). */
function keepAliveGet(agent: Agent, port: number, path: string): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    }).on('error', reject);
  });
}

/** The pod's Envoy flags with the config path swapped for `file`. */
function podArgs(file: string): string[] {
  const args = [...(envoyContainer.args as string[])];
  args[args.indexOf('-c') + 1] = file;
  return args;
}

describe('the gateway pod', () => {
  it('renders a bootstrap that Envoy 1.40 validates with the pod\'s own flags', () => {
    const file = join(dirs.dir, 'validate.yaml');
    const text = renderAsInitContainer(file, {});
    expect(text).toContain('port_value: 8443');
    const out = execFileSync(envoyBinary(), ['--mode', 'validate', ...podArgs(file)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).toContain('OK');
  });

  it('the preStop hook drains Envoy: afterwards every reply closes its connection; it returns once idle', async () => {
    const gatewayPort = await freePort();
    const adminPort = await freePort();
    const file = join(dirs.dir, 'drain.yaml');
    renderAsInitContainer(file, { GATEWAY_PORT: String(gatewayPort), ENVOY_ADMIN_PORT: String(adminPort) });
    // authz and the embedder are not needed: GET /health is Envoy's own direct response.
    envoy = startProcess({ name: 'envoy', command: envoyBinary(), args: [...podArgs(file), '--base-id', String(gatewayPort)], env: {}, logFile: join(dirs.logDir, 'envoy.log') });
    await waitFor('Envoy to be LIVE', async () => (await fetch(`http://127.0.0.1:${adminPort}/ready`)).ok, 30_000, [envoy]);
    const agent = new Agent({ keepAlive: true, ca: readFileSync(dirs.caFile), servername: 'localhost' });
    const health = () => keepAliveGet(agent, gatewayPort, '/health');

    const before = await health();
    expect(before.status).toBe(200);
    expect(before.headers.connection).not.toBe('close');

    const [, , seconds] = envoyContainer.lifecycle.preStop.exec.command as string[];
    const hook = spawnSync('bash', [drainScript, String(adminPort), seconds!], { encoding: 'utf8', timeout: 30_000 });
    expect(hook.status).toBe(0);

    const during = await health();
    expect(during.status).toBe(200); // requests still served while draining ...
    expect(during.headers.connection).toBe('close'); // ... but no connection is kept for more
    agent.destroy();
  });

  it('the preStop hook returns at once when Envoy is already gone', async () => {
    const unused = await freePort();
    const hook = spawnSync('bash', [drainScript, String(unused), '300'], { encoding: 'utf8', timeout: 10_000 });
    expect(hook.status).toBe(0);
  });
});
