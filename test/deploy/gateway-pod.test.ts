/**
 * The gateway pod as the manifests define it, with the real Envoy 1.40: the init container's
 * render (envoy/render.ts with the overlay's settings) gives a bootstrap Envoy accepts with the
 * pod's own flags, and the preStop hook (deploy/gateway/drain.sh) drains that Envoy: replies
 * during the drain close their connections, so clients move to other replicas.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startProcess, waitFor, type ManagedProcess } from '../support/process.js';
import {
  deleteRedisKeys,
  envoyBinary,
  makeStackDir,
  manifestModelId,
  pickPorts,
  removeStackDir,
  repoRoot,
  startAuthz,
  type ServiceEnv,
  type StackDir,
  type StackPorts,
} from '../support/stack.js';
import { adminFor } from './admin.js';
import { Agent, get } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { parse } from 'yaml';
import { find, parseObjects, renderOverlay } from './kustomize.js';

const objects = parseObjects(renderOverlay('production'));
const pod = find(objects, 'Deployment', 'ctg-gateway').spec.template.spec;
const renderContainer = pod.initContainers.find((c: any) => c.name === 'render-config');
const envoyContainer = pod.containers.find((c: any) => c.name === 'envoy');
const drainScript = join(repoRoot, 'deploy/gateway/drain.sh');
let dirs: StackDir;
let ports: StackPorts;
let svc: ServiceEnv;
const processes: ManagedProcess[] = [];

beforeAll(async () => {
  dirs = makeStackDir();
  ports = await pickPorts();
  const modelDir = join(repoRoot, '.local/models/test');
  svc = { modelDir, modelId: manifestModelId(modelDir), redisKeyPrefix: `ctg-e2e-${randomBytes(6).toString('hex')}:` };
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  if (svc) deleteRedisKeys(svc.redisKeyPrefix);
  removeStackDir(dirs);
});

/** Runs the init container's command here, with its settings; `overrides` stand in for the cluster. */
function renderAsInitContainer(file: string, overrides: Record<string, string>): string {
  const settings = find(objects, 'ConfigMap', 'ctg-gateway-render-env').data!;
  const [node, script, ...args] = renderContainer.command as string[];
  expect(node).toBe('node');
  // The image runs envoy/render.ts compiled to render.js (test/images/pod.check.ts runs the
  // image itself); here the same module runs from its source.
  expect(script).toBe('envoy/render.js');
  execFileSync(process.execPath, ['--import', 'tsx', script!.replace(/\.js$/, '.ts'), ...args.slice(0, -1), file], {
    cwd: repoRoot,
    stdio: 'pipe',
    env: {
      PATH: process.env.PATH ?? '',
      ...settings,
      // The mounted certificate and caller token exist only in the cluster; the upstreams stay the overlay's
      // DNS names (STRICT_DNS) unless a test points them at its own processes.
      TLS_CERT_FILE: dirs.certFile,
      TLS_KEY_FILE: dirs.keyFile,
      AUTHZ_CALLER_TOKEN_FILE: dirs.callerTokenFile,
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
  it("renders a bootstrap that Envoy 1.40 validates with the pod's own flags", () => {
    const file = join(dirs.dir, 'validate.yaml');
    const text = renderAsInitContainer(file, {});
    expect(text).toContain('port_value: 8443');
    // Every replica is its own Envoy host: the headless Services' names, resolved by Envoy.
    const clusters = (parse(text) as any).static_resources.clusters as any[];
    for (const [name, host] of [
      ['authz', 'ctg-authz-pods'],
      ['embedder', 'ctg-embedder-pods'],
    ]) {
      const cluster = clusters.find((c) => c.name === name);
      expect(cluster.type, name).toBe('STRICT_DNS');
      expect(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address, name).toBe(host);
      expect(cluster.health_checks, name).toHaveLength(1);
      expect(cluster.outlier_detection, name).toBeDefined();
    }
    const out = execFileSync(envoyBinary(), ['--mode', 'validate', ...podArgs(file)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toContain('OK');
  });

  it('the preStop hook drains Envoy and waits for the request in flight, then returns', async () => {
    // A real authz lets the request past ext_authz (headers only); its body never finishes, so it
    // stays in flight until the client goes. No embedder is needed: the request never gets there.
    processes.push(await startAuthz(dirs, ports, svc));
    const { key } = adminFor(dirs, svc).orgWithKey('drain', [svc.modelId]);
    const adminPort = ports.admin;
    const file = join(dirs.dir, 'drain.yaml');
    // authz's deadline is raised from the pod's 500 ms: on this shared machine a cold Check can
    // take longer, and a timed-out Check would end the request this test needs in flight.
    renderAsInitContainer(file, {
      AUTHZ_HOST: '127.0.0.1',
      EMBEDDER_HOST: '127.0.0.1',
      GATEWAY_PORT: String(ports.gateway),
      ENVOY_ADMIN_PORT: String(adminPort),
      AUTHZ_PORT: String(ports.authz),
      AUTHZ_TIMEOUT_MS: '10000',
    });
    const envoy = startProcess({
      name: 'envoy',
      command: envoyBinary(),
      args: [...podArgs(file), '--base-id', String(ports.gateway)],
      env: {},
      logFile: join(dirs.logDir, 'envoy.log'),
    });
    processes.push(envoy);
    await waitFor('Envoy to be LIVE', async () => (await fetch(`http://127.0.0.1:${adminPort}/ready`)).ok, 30_000, [envoy]);
    const agent = new Agent({ keepAlive: true, ca: readFileSync(dirs.caFile), servername: 'localhost' });
    const health = () => keepAliveGet(agent, ports.gateway, '/health');
    const stat = async (name: string) =>
      Number(/: (\d+)/.exec(await (await fetch(`http://127.0.0.1:${adminPort}/stats?filter=^${name.replace(/\./g, '\\.')}$`)).text())?.[1]);

    expect((await health()).headers.connection).not.toBe('close');
    const upload = tlsConnect({
      host: '127.0.0.1',
      port: ports.gateway,
      ca: readFileSync(dirs.caFile),
      servername: 'localhost',
      ALPNProtocols: ['http/1.1'],
    });
    upload.on('error', () => undefined);
    upload.write(
      `POST /v1/embeddings HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"model"`,
    );
    // In flight past authz: the Check said yes and the request waits for the rest of its body.
    await waitFor(
      'the upload to pass ext_authz and stay in flight',
      async () => (await stat('http.gateway.ext_authz.ok')) === 1 && (await stat('http.gateway.downstream_rq_active')) === 1,
      20_000,
      [envoy],
    );

    const [, , seconds, minSeconds] = envoyContainer.lifecycle.preStop.exec.command as string[];
    const hookStart = Date.now();
    const hook = spawn('bash', [drainScript, String(adminPort), seconds!, minSeconds!], { stdio: 'ignore' });
    let exitCode: number | null | undefined;
    const exited = new Promise<void>((resolve) =>
      hook.on('exit', (code) => {
        exitCode = code;
        resolve();
      }),
    );
    // Draining: replies now close their connections, and the hook keeps waiting for the upload.
    await waitFor('replies to close their connections', async () => (await health()).headers.connection === 'close', 10_000, [envoy]);
    await new Promise((r) => setTimeout(r, 1_500)); // two of the hook's polls, well short of its 300 s bound
    expect(exitCode).toBeUndefined();

    upload.destroy();
    await Promise.race([
      exited,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the hook did not return once idle')), 20_000 + Number(minSeconds) * 1000),
      ),
    ]);
    expect(exitCode).toBe(0);
    // Idle or not, the hook holds the pod for the endpoint-propagation minimum before SIGTERM.
    expect(Number(minSeconds)).toBeGreaterThanOrEqual(10);
    expect(Date.now() - hookStart).toBeGreaterThanOrEqual(Number(minSeconds) * 1000);
    agent.destroy();
  });

  it("Envoy's stats listener, the port Prometheus scrapes, serves GET /stats/prometheus and nothing else of the admin interface", async () => {
    const statsPort = Number(find(objects, 'ConfigMap', 'ctg-gateway-render-env').data!.ENVOY_STATS_PORT);
    const declared = envoyContainer.ports.find((p: any) => p.name === 'stats');
    expect(declared).toEqual({ name: 'stats', containerPort: statsPort, protocol: 'TCP' });
    const [gatewayPort, adminPort, port] = [await freePort(), await freePort(), await freePort()];
    const file = join(dirs.dir, 'stats.yaml');
    renderAsInitContainer(file, {
      AUTHZ_HOST: '127.0.0.1',
      EMBEDDER_HOST: '127.0.0.1',
      GATEWAY_PORT: String(gatewayPort),
      ENVOY_ADMIN_PORT: String(adminPort),
      ENVOY_STATS_PORT: String(port),
    });
    const envoy = startProcess({
      name: 'envoy-stats',
      command: envoyBinary(),
      args: [...podArgs(file), '--base-id', String(gatewayPort)],
      env: {},
      logFile: join(dirs.logDir, 'envoy-stats.log'),
    });
    processes.push(envoy);
    await waitFor('Envoy to be LIVE', async () => (await fetch(`http://127.0.0.1:${adminPort}/ready`)).ok, 30_000, [envoy]);
    const res = await fetch(`http://127.0.0.1:${port}/stats/prometheus`);
    expect(res.status).toBe(200);
    // The series deploy/prometheus/alerts.yml reads, zero-valued counters included.
    const text = await res.text();
    expect(text).toMatch(/^envoy_http_downstream_rq_total\{envoy_http_conn_manager_prefix="gateway"\} \d+$/m);
    expect(text).toMatch(/^envoy_http_ext_authz_error\{envoy_http_conn_manager_prefix="gateway"\} 0$/m);
    // The admin interface's other pages, other methods and path tricks: 404 from the listener itself.
    for (const [method, path] of [
      ['GET', '/config_dump'],
      ['GET', '/stats'],
      ['GET', '/clusters'],
      ['POST', '/quitquitquit'],
      ['POST', '/drain_listeners'],
      ['POST', '/stats/prometheus'],
      ['GET', '/stats/prometheus/../config_dump'],
      ['GET', '//config_dump'],
    ] as const) {
      const other = await fetch(`http://127.0.0.1:${port}${path}`, { method });
      expect(other.status, `${method} ${path}`).toBe(404);
      expect(await other.text(), `${method} ${path}`).not.toMatch(/envoy_|"configs"|cluster/);
    }
    // Envoy is still running (no /quitquitquit got through).
    expect((await fetch(`http://127.0.0.1:${adminPort}/ready`)).ok).toBe(true);
  });

  it('the preStop hook returns at once when Envoy is already gone', async () => {
    const unused = await freePort();
    const hook = spawnSync('bash', [drainScript, String(unused), '300'], { encoding: 'utf8', timeout: 10_000 });
    expect(hook.status).toBe(0);
  });
});
