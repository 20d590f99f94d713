/**
 * The four images as a platform team runs them (make test-images, after scripts/images/build.sh):
 * the staging overlay's containers, each with its pod's restrictions (read-only root, the
 * manifest's non-root user, no capabilities, no privilege escalation) and exactly its rendered
 * environment and Secret files, on one podman network standing in for the namespace, where every
 * Service name the overlay creates resolves (aardvark-dns) to the containers it selects. Two
 * authz replicas, one embedder, the gateway's Envoy rendered by its init container, the admin
 * service with its checkpoint volume, a Redis with a password, and an OpenID Connect provider
 * the admin reaches by its network name over HTTPS (the overlay patched as deploy/README.md
 * shows for a provider with a private CA).
 * The first owner is made as deploy/README.md says (the CLI, `exec`'d in the admin container);
 * they sign in through the provider and, through the admin API with the session cookie and CSRF
 * token as the console sends them, create an organization and a key. Through the containerised
 * Envoy that key's embedding is 200 and its usage is recorded, a keyless request is 401; straight
 * to the embedder container (no gateway, forged identity headers), the request is refused.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADERS as HEADERS } from '../../contract/headers.js';
import { settlementAclRules, settlementNsKey } from '../../contract/redis/settlement-keys.js';
import { localImage } from '../../scripts/images/image-tag.js';
import { pinImages } from '../../scripts/images/pin-overlay.js';
import { find, parseObjects, renderPatched, workload, type K8sObject } from '../deploy/kustomize.js';
import { makeStackDir, removeStackDir, repoRoot, type StackDir } from '../support/stack.js';
import { waitFor } from '../support/process.js';
import { bootstrapOwner, cliWithToken, ConsoleSession, issueCertificate, startProvider } from './admin-pod.js';
import { podSend } from './pod-names.js';
import { PodNetwork, podman } from './podman.js';

const IMAGES = {
  authz: localImage('authz'),
  embedder: localImage('embedder'),
  gateway: localImage('gateway'),
  admin: localImage('admin'),
};
const REDIS_IMAGE = 'localhost/ctg-test-redis:bookworm';
const README = readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8');
/** The test network's identity provider (a container, by its network name) and the console's origin there. */
const IDP = { name: 'ctg-oidc', port: 8443 };
const ISSUER = `https://${IDP.name}:${IDP.port}`;

/** The image by tag and the digest podman has for it, as a registry's push would give them. */
function pinnedRef(image: string): string {
  try {
    return `${image}@${podman(['image', 'inspect', '--format', '{{.Digest}}', image]).trim()}`;
  } catch {
    throw new Error(`${image}: run scripts/images/build.sh first`);
  }
}
/**
 * The identity provider in the overlay as deploy/README.md shows it (the issuer, the client, and
 * the provider's private CA for Node), with this network's names: the provider's, and the
 * console's origin as the administrators' browser (this test) reaches it.
 */
function signOnIn(kustomization: string, consoleOrigin: string): string {
  const snippet = /```yaml\n# overlays\/<env>\/kustomization\.yaml, configMapGenerator's ctg-admin-env[^\n]*\n([\s\S]*?)```/.exec(
    README,
  )?.[1];
  if (!snippet) throw new Error('deploy/README.md shows no ctg-admin-env snippet for the identity provider');
  const literals = snippet.replace(/OIDC_ISSUER=\S+/, `OIDC_ISSUER=${ISSUER}`);
  const publicUrl = /^ {6}- ADMIN_PUBLIC_URL=\S+\n/m;
  if (!publicUrl.test(kustomization)) throw new Error('the staging overlay sets no ADMIN_PUBLIC_URL in ctg-admin-env');
  return kustomization.replace(publicUrl, `      - ADMIN_PUBLIC_URL=${consoleOrigin}\n${literals}`);
}

/**
 * The staging overlay pinned to the images just built, by digest, as scripts/images/pin-overlay.ts
 * pins it for a registry (deploy/README.md → Images → Pinning): every container below runs the
 * image reference the rendered manifests name.
 */
const objects = parseObjects(
  renderPatched('staging', (kustomization) =>
    signOnIn(
      pinImages(kustomization, {
        'ctg-authz': pinnedRef(IMAGES.authz),
        'ctg-embedder': pinnedRef(IMAGES.embedder),
        'ctg-gateway': pinnedRef(IMAGES.gateway),
        'ctg-admin': pinnedRef(IMAGES.admin),
      }),
      'http://ctg-admin:9443',
    ),
  ),
);
const podOf = (name: string) => workload(objects, name).spec.template.spec;
const envOf = (configMap: string) => ({ ...find(objects, 'ConfigMap', configMap).data });
/** The Service names that select a workload's pods: the DNS aliases its containers get. */
const servicesOf = (deployment: string): string[] => {
  const labels = workload(objects, deployment).spec.template.metadata.labels as Record<string, string>;
  return objects
    .filter((o: K8sObject) => o.kind === 'Service' && Object.entries(o.spec.selector ?? {}).every(([k, v]) => labels[k] === v))
    .map((o) => o.metadata.name);
};
const userOf = (pod: any) => `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`;

let net: PodNetwork;
let dirs: StackDir;
let files: string;
let gatewayPort: number;
let embedderPort: number;
let authz: string[] = [];
let key: string;
let org: string;
let metricsToken: string;
const modelId = envOf('ctg-authz-env').MODEL_ID!;

/**
 * The Secret volumes a container mounts, as the kubelet lays them out (every key, or the
 * volume's `items`, as files owned by the pod's user, mode 0440), from `secrets` (name -> key ->
 * content). A Secret the manifests add later fails here by name until the test supplies it.
 */
function secretMounts(pod: any, containerName: string, secrets: Record<string, Record<string, string>>): Record<string, string> {
  const container = [...pod.containers, ...(pod.initContainers ?? [])].find((c: any) => c.name === containerName);
  const uid = pod.securityContext.runAsUser as number;
  const mounts: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes.find((v: any) => v.name === mount.name);
    if (!volume?.secret) continue;
    const content = secrets[volume.secret.secretName];
    if (!content) throw new Error(`the image test has no content for Secret ${volume.secret.secretName}`);
    const dir = join(files, `${containerName}-${mount.name}`);
    mkdirSync(dir, { recursive: true });
    const items: { key: string; path: string }[] = volume.secret.items ?? Object.keys(content).map((key) => ({ key, path: key }));
    for (const { key, path } of items) {
      if (content[key] === undefined) throw new Error(`the image test has no key ${key} of Secret ${volume.secret.secretName}`);
      writeFileSync(join(dir, path), content[key]);
      chownSync(join(dir, path), uid, uid);
      chmodSync(join(dir, path), 0o440);
    }
    mounts[dir] = mount.mountPath;
  }
  return mounts;
}

function https(
  port: number,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        ca: readFileSync(dirs.caFile),
        servername: 'localhost',
        headers,
      },
      (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk) => (text += chunk))
          .on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject).end(body);
  });
}

/** redis-cli in the Redis container, logged in as the default user; the reply, trimmed. */
function redisCli(password: string, ...args: string[]): string {
  return podman(['exec', '-e', `REDISCLI_AUTH=${password}`, `${net.name}-redis`, 'redis-cli', ...args]).trim();
}

/** The admin CLI as deploy/README.md runs it, `exec`'d in the admin container, as the owner made first. */
let admin: (args: readonly string[]) => string;

/** The host folder standing in for each claim of a StatefulSet's pod, mounted writable where the pod mounts it. */
function claimMounts(deployment: string, container: string): Record<string, string> {
  const set = workload(objects, deployment);
  const uid = set.spec.template.spec.securityContext.fsGroup as number;
  const claims = new Set((set.spec.volumeClaimTemplates ?? []).map((c: any) => c.metadata.name as string));
  const mounts: Record<string, string> = {};
  for (const mount of set.spec.template.spec.containers.find((c: any) => c.name === container).volumeMounts) {
    if (!claims.has(mount.name)) continue;
    const dir = join(files, `${container}-claim-${mount.name}`);
    mkdirSync(dir);
    chownSync(dir, uid, uid);
    mounts[dir] = mount.mountPath;
  }
  return mounts;
}

/** Starts Redis with a password and the embedder's ACL user (deploy/README.md, Redis); its default user's password. */
async function startRedis(embedderPassword: string): Promise<string> {
  const password = randomBytes(18).toString('hex');
  net.run({
    name: 'redis',
    image: REDIS_IMAGE,
    // Stands in for the platform's Redis; the uid the Redis component runs as (10,000 or above).
    user: '10004:10004',
    aliases: ['redis'],
    args: ['--requirepass', password, '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
  });
  await waitFor(
    'Redis to answer',
    async () => {
      try {
        return redisCli(password, 'PING') === 'PONG';
      } catch {
        return false;
      }
    },
    30_000,
  );
  // The embedder's own ACL user, with exactly settlementAclRules for the embedder's prefix and
  // the settlement's namespace (made here as authz makes it: store/settlement.ts, which also
  // re-creates the user when EMBEDDER_REDIS_USERNAME is set; authz's loading the functions
  // rendered with the same namespace is what makes the embedder ready).
  const embedderEnv = envOf('ctg-embedder-env');
  const prefix = embedderEnv.REDIS_KEY_PREFIX!;
  const ns = randomBytes(16).toString('hex');
  expect(redisCli(password, 'SET', settlementNsKey(prefix), ns)).toBe('OK');
  expect(redisCli(password, 'ACL', 'SETUSER', embedderEnv.REDIS_USERNAME!, ...settlementAclRules(prefix, ns, embedderPassword))).toBe('OK');
  return password;
}

let adminContainer: string;
let owner: { name: string; token: string };
let console_: ConsoleSession;
let auditClaim: string;
const CONSOLE = 'http://ctg-admin:9443';

beforeAll(async () => {
  for (const image of [...Object.values(IMAGES), REDIS_IMAGE]) {
    expect(() => podman(['image', 'exists', image]), `${image}: run scripts/images/build.sh first`).not.toThrow();
  }
  dirs = makeStackDir();
  files = mkdtempSync(join(tmpdir(), 'ctg-images-'));
  net = new PodNetwork();
  const embedderPassword = randomBytes(18).toString('hex');
  const password = await startRedis(embedderPassword);
  metricsToken = randomBytes(24).toString('hex');
  const adminEnv = envOf('ctg-admin-env');
  const clientSecret = randomBytes(24).toString('hex');

  // What the platform team puts in the Secrets the manifests name (deploy/README.md).
  const secrets: Record<string, Record<string, string>> = {
    'ctg-redis': { url: `redis://:${password}@redis:6379` },
    'ctg-redis-embedder': { url: 'redis://redis:6379', password: embedderPassword },
    'ctg-redis-admin': { url: `redis://:${password}@redis:6379` },
    'ctg-grant-secret': { 'grant-secret': randomBytes(32).toString('hex') },
    'ctg-authz-caller-token': { 'caller-token': randomBytes(24).toString('hex') },
    'ctg-metrics-token': { 'metrics-token': metricsToken },
    'ctg-key-hash-secret': { 'key-hash-secret': readFileSync(dirs.secretFile, 'utf8') },
    'ctg-gateway-tls': { 'tls.crt': readFileSync(dirs.certFile, 'utf8'), 'tls.key': readFileSync(dirs.keyFile, 'utf8') },
    'ctg-audit-secret': { 'audit-secret': randomBytes(32).toString('hex') },
    // The console's client at the provider, and the provider's (private) CA for NODE_EXTRA_CA_CERTS.
    'ctg-admin-oidc': { 'client-secret': clientSecret, 'ca.crt': readFileSync(dirs.caFile, 'utf8') },
  };
  // authz: its ConfigMap and its Secret volumes (REDIS_URL_FILE, the key-hash secret).
  const authzPod = podOf('ctg-authz');
  const authzMounts = secretMounts(authzPod, 'authz', secrets);
  authz = ['authz-a', 'authz-b'].map((name) =>
    net.run({
      name,
      image: authzPod.containers[0].image,
      user: userOf(authzPod),
      env: envOf('ctg-authz-env'),
      mounts: authzMounts,
      aliases: servicesOf('ctg-authz'),
    }),
  );
  const embedderPod = podOf('ctg-embedder');
  const embedder = net.run({
    name: 'embedder',
    image: embedderPod.containers[0].image,
    user: userOf(embedderPod),
    env: envOf('ctg-embedder-env'),
    mounts: secretMounts(embedderPod, 'embedder', secrets),
    aliases: servicesOf('ctg-embedder'),
    publish: [8081],
  });
  embedderPort = net.hostPort(embedder, 8081);

  // The gateway pod: the init container renders the bootstrap (authz image, the pod's user)
  // into the emptyDir Envoy then reads, with the Secret ctg-gateway-tls mounted.
  const gatewayPod = podOf('ctg-gateway');
  const gatewayUid = gatewayPod.securityContext.runAsUser as number;
  const envoyDir = join(files, 'envoy');
  mkdirSync(envoyDir);
  chownSync(envoyDir, gatewayUid, gatewayUid);
  const init = gatewayPod.initContainers[0];
  net.run({
    name: 'render-config',
    image: init.image,
    user: userOf(gatewayPod),
    env: envOf('ctg-gateway-render-env'),
    once: true,
    writable: { [envoyDir]: '/run/envoy' },
    mounts: secretMounts(gatewayPod, 'render-config', secrets),
    entrypoint: init.command,
  });
  const envoy = gatewayPod.containers[0];
  const gateway = net.run({
    name: 'gateway',
    image: envoy.image,
    user: userOf(gatewayPod),
    args: envoy.args,
    publish: [8443],
    mounts: { [envoyDir]: '/run/envoy', ...secretMounts(gatewayPod, 'envoy', secrets) },
  });
  gatewayPort = net.hostPort(gateway, 8443);

  // The identity provider, by its network name over HTTPS (a certificate from the test's CA),
  // with the console's client registered at the redirect URI the admin sends.
  const adminPod = podOf('ctg-admin');
  const tlsDir = join(files, 'idp-tls');
  issueCertificate(join(dirs.dir, 'tls'), IDP.name, tlsDir, adminPod.securityContext.runAsUser);
  const provider = startProvider(net, {
    ...IDP,
    image: IMAGES.admin,
    user: userOf(adminPod),
    clientId: adminEnv.OIDC_CLIENT_ID!,
    clientSecret,
    redirectUri: `${adminEnv.ADMIN_PUBLIC_URL}/api/oidc/callback`,
    tlsDir,
  });
  // The admin pod: its ConfigMap, its Secret files and its claim (the checkpoints) as the StatefulSet mounts them.
  const claims = claimMounts('ctg-admin', 'admin');
  auditClaim = Object.keys(claims)[0]!;
  adminContainer = net.run({
    name: 'admin',
    image: adminPod.containers[0].image,
    user: userOf(adminPod),
    env: adminEnv,
    mounts: secretMounts(adminPod, 'admin', secrets),
    writable: claims,
    aliases: servicesOf('ctg-admin'),
    publish: [9443],
  });
  const send = podSend(
    { [CONSOLE]: net.hostPort(adminContainer, 9443), [ISSUER]: net.hostPort(provider, IDP.port) },
    readFileSync(dirs.caFile, 'utf8'),
  );
  console_ = new ConsoleSession(CONSOLE, send);

  try {
    await waitFor('the embedder to load its model', async () => (await fetch(`http://127.0.0.1:${embedderPort}/ready`)).ok, 180_000);
    await waitFor('the gateway to serve /health', async () => (await https(gatewayPort, '/health', undefined, {})).status === 200, 60_000);
    const answers = (url: string) => () =>
      send(new URL(url), { headers: {} }).then(
        (r) => r.ok,
        () => false,
      );
    await waitFor('the identity provider', answers(`${ISSUER}/.well-known/openid-configuration`), 60_000);
    await waitFor('the admin service to be ready', answers(`${CONSOLE}/ready`), 60_000);
    // Both authz replicas healthy in Envoy (each its own host via the headless Service).
    await waitFor('Envoy to see both authz replicas healthy', async () => healthyHosts('authz') === 2, 30_000);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${net.logs()}`);
  }
});

afterAll(() => {
  net?.remove();
  if (files) rmSync(files, { recursive: true, force: true });
  if (dirs) removeStackDir(dirs);
});

/** Healthy hosts of an Envoy cluster, read from the gateway container's loopback-only admin. */
/** Envoy's /clusters lines of `cluster` (what the host counts below are read from). */
function clusterLines(cluster: string): string[] {
  const port = envOf('ctg-gateway-render-env').ENVOY_ADMIN_PORT;
  const out = podman([
    'exec',
    `${net.name}-gateway`,
    'bash',
    '-c',
    `exec 3<>/dev/tcp/127.0.0.1/${port}; printf 'GET /clusters HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3`,
  ]);
  return out.split('\n').filter((l) => l.startsWith(`${cluster}::`));
}

function healthyHosts(cluster: string): number {
  return clusterLines(cluster).filter((l) => l.includes('::health_flags::healthy')).length;
}

const EMBED = JSON.stringify({ model: modelId, input: ['Patient denies chest pain.'] });

describe('the admin service, run as the staging overlay runs it', () => {
  it("the first owner is made as deploy/README.md says: the CLI exec'd in the admin container, while no administrator exists", () => {
    owner = bootstrapOwner(README, adminContainer);
    expect(owner.token).toMatch(/^ctga_/);
    admin = cliWithToken(README, adminContainer, owner.token);
    // From then on the CLI acts only with an administrator's token.
    expect(() => podman(['exec', adminContainer, 'node', 'admin/src/cli/main.js', 'org', 'list', '--json'])).toThrow(/token/i);
  });

  it('the owner signs in through the identity provider, which the admin reaches by its network name over HTTPS', async () => {
    expect(await console_.signIn(owner.name)).toMatchObject({ actor: `admin:${owner.name}`, role: 'owner', via: 'oidc' });
  });

  it('through the admin API, with the session cookie and CSRF token as the console sends them: an organization and a key', async () => {
    org = `images-${randomBytes(3).toString('hex')}`;
    // The cookie alone changes nothing: without the session's CSRF token, refused.
    const forged = await console_.call('POST', '/api/orgs', { id: org, models: [modelId] }, { 'x-csrf-token': '' });
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe('csrf_rejected');
    const made = await console_.call('POST', '/api/orgs', { id: org, models: [modelId] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const created = await console_.call('POST', `/api/orgs/${org}/keys`, { name: 'image test' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ org, name: 'image test', status: 'active' });
    key = created.body.key;
  });

  it("every change is audited under the owner's name, checkpointed on the pod's claim, and the trail verifies", async () => {
    const { status, body } = await console_.call('GET', '/api/audit?limit=20');
    expect(status).toBe(200);
    const mine = (body.records as { actor: string; action: string; detail: any }[]).filter((r) => r.actor === `admin:${owner.name}`);
    expect(mine.map((r) => r.action)).toEqual(expect.arrayContaining(['session.create', 'org.create', 'key.create']));
    expect(mine.find((r) => r.action === 'session.create')!.detail).toMatchObject({ via: 'oidc' });
    // The refused change is on record too, with who tried.
    expect(mine.map((r) => r.action)).toContain('access.csrf_rejected');
    // The first owner was made by the CLI before anyone could sign in: named for the pod's user.
    expect(body.records).toContainEqual(
      expect.objectContaining({ actor: 'bootstrap:ctg-admin', action: 'admin.create', target: `admin:${owner.name}` }),
    );
    // The checkpoints: one signed line per record, on the claim's folder (the root is read-only).
    const anchor = envOf('ctg-admin-env').AUDIT_ANCHOR_FILE!;
    const lines = readFileSync(join(auditClaim, basename(anchor)), 'utf8')
      .trim()
      .split('\n');
    expect(lines.length).toBe(body.head.seq);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ seq: body.head.seq, hash: body.head.hash });
    expect(JSON.parse(admin(['audit', 'verify', '--json']))).toMatchObject({ ok: true });
  });

  it("the admin listener's /metrics answers only the metrics token", async () => {
    const plain = await console_.call('GET', '/metrics', undefined, { cookie: '' });
    expect(plain.status).toBe(401);
    const scraped = await console_.call('GET', '/metrics', undefined, { authorization: `Bearer ${metricsToken}` });
    expect(scraped.status).toBe(200);
    expect(scraped.body).toMatch(/^ctg_budget_organizations\{state="budgeted"\} 0$/m);
  });
});

describe('the images, run as the staging overlay runs them', () => {
  it("every container runs as its pod's non-root user on a read-only root filesystem", () => {
    for (const [container, deployment] of [
      [authz[0]!, 'ctg-authz'],
      [`${net.name}-embedder`, 'ctg-embedder'],
      [`${net.name}-gateway`, 'ctg-gateway'],
      [adminContainer, 'ctg-admin'],
    ] as const) {
      const uid = podOf(deployment).securityContext.runAsUser as number;
      expect(uid, deployment).toBeGreaterThanOrEqual(10_000);
      expect(podman(['exec', container, 'id', '-u']).trim(), container).toBe(String(uid));
      expect(() => podman(['exec', container, 'bash', '-c', 'echo x > /app/x || echo x > /x']), container).toThrow(/Read-only file system/);
    }
    // The images themselves declare the same numeric non-root user (Kubernetes' runAsNonRoot check).
    for (const [name, image] of Object.entries(IMAGES))
      expect(podman(['image', 'inspect', '--format', '{{.Config.User}}', image]).trim()).toBe(userOf(podOf(`ctg-${name}`)));
  });

  it('every container runs the image the pinned manifests name, by tag and digest', () => {
    for (const [container, deployment] of [
      [authz[0]!, 'ctg-authz'],
      [`${net.name}-embedder`, 'ctg-embedder'],
      [`${net.name}-gateway`, 'ctg-gateway'],
      [adminContainer, 'ctg-admin'],
    ] as const) {
      const named = podOf(deployment).containers[0].image as string;
      expect(named).toMatch(/^localhost\/ctg-[a-z]+:[\w.-]+@sha256:[0-9a-f]{64}$/);
      // podman records a reference with both as the digest alone: the image that ran is that one.
      expect(podman(['inspect', '--format', '{{.ImageName}}', container]).trim()).toBe(named.replace(/:[\w.-]+@/, '@'));
    }
  });

  it("each image carries only what its process runs: compiled JavaScript, its own packages, this platform's binaries", () => {
    const inImage = (image: string, script: string) =>
      podman(['run', '--rm', '--pull=never', '--entrypoint', 'bash', image, '-c', script]).trim().split('\n').filter(Boolean);
    for (const image of [IMAGES.authz, IMAGES.embedder, IMAGES.admin]) {
      // No TypeScript to transpile at start, no transpiler, no compiler.
      expect(inImage(image, "cd /app && find . -name '*.ts' ! -name '*.d.ts' -not -path './node_modules/*'"), image).toEqual([]);
      expect(inImage(image, 'cd /app/node_modules && ls -d tsx esbuild typescript 2>/dev/null || true'), image).toEqual([]);
    }
    // authz never loads the model: no ONNX Runtime (288 MB) in its image.
    expect(inImage(IMAGES.authz, 'ls -d /app/node_modules/onnxruntime-* 2>/dev/null || true')).toEqual([]);
    // admin: its own folder and what it shares, none of the request path's code or packages (no
    // model runtime, no gRPC, no Envoy), nor the test identity provider; the console's files beside it.
    expect(inImage(IMAGES.admin, 'ls /app')).toEqual(['admin', 'contract', 'node_modules', 'openapi', 'package.json']);
    expect(
      inImage(IMAGES.admin, 'cd /app/node_modules && ls -d onnxruntime-* @grpc oidc-provider playwright-core 2>/dev/null || true'),
    ).toEqual([]);
    expect(inImage(IMAGES.admin, 'ls /app/admin/src/console/index.html /app/node_modules/openid-client/package.json')).toHaveLength(2);
    // The embedder's ONNX Runtime: this platform's binaries only (not darwin, win32 or the other arch).
    expect(inImage(IMAGES.embedder, 'cd /app/node_modules/onnxruntime-node/bin && ls -d napi-v*/*/*')).toEqual([
      `napi-v6/linux/${process.arch}`,
    ]);
  });

  it('an embedding through the containerised Envoy is 200, and its usage is recorded', async () => {
    const res = await https(gatewayPort, '/v1/embeddings', EMBED, { authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    expect(res.status, res.body).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.data).toHaveLength(1);
    expect(body.data[0].embedding.length).toBeGreaterThan(0);
    const tokens = body.usage.prompt_tokens as number;
    expect(tokens).toBeGreaterThan(0);
    await waitFor(
      'the usage to be recorded',
      async () => {
        const totals = JSON.parse(admin(['usage', '--org', org, '--json'])) as { requests: number; tokens: number };
        return totals.requests === 1 && totals.tokens === tokens;
      },
      10_000,
    );
  });

  it('a request without a key is 401 at the gateway', async () => {
    const res = await https(gatewayPort, '/v1/embeddings', EMBED, { 'content-type': 'application/json' });
    expect(res.status).toBe(401);
  });

  it('the gateway balances over every authz replica (headless Service, STRICT_DNS)', async () => {
    const flags = (cluster: string) =>
      clusterLines(cluster)
        .filter((l) => /::(health_flags|hostname)::/.test(l))
        .join('\n');
    // Each host's health is Envoy's last check of it (every 0.5-1 s, one failure takes it out):
    // a snapshot can catch a replica between a late answer and the next check (2 of 9 runs here
    // saw no healthy authz host while every request was served), so the state is waited for.
    await waitFor(
      'both authz replicas and the embedder healthy in Envoy',
      async () => healthyHosts('authz') === 2 && healthyHosts('embedder') === 1,
      10_000,
    ).catch(() => undefined);
    expect(healthyHosts('authz'), flags('authz')).toBe(2);
    expect(healthyHosts('embedder'), flags('embedder')).toBe(1);
  });

  it('a request straight to the embedder container, with forged identity headers, is refused', async () => {
    const res = await fetch(`http://127.0.0.1:${embedderPort}/v1/embeddings`, {
      method: 'POST',
      body: EMBED,
      headers: { 'content-type': 'application/json', [HEADERS.org]: org, [HEADERS.key]: 'forged', [HEADERS.model]: modelId },
    });
    // Refused by the embedder itself (no verified grant), not merely unreachable.
    expect(res.status, await res.text()).toBe(401);
  });

  it("the embedder's /metrics answers only the metrics token from Secret ctg-metrics-token", async () => {
    expect((await fetch(`http://127.0.0.1:${embedderPort}/metrics`)).status).toBe(401);
    const res = await fetch(`http://127.0.0.1:${embedderPort}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^embedder_/m);
  });

  it('the embedder reaches Redis only as its ACL user: settlement functions yes, anything else no', () => {
    const env = envOf('ctg-embedder-env');
    const password = readFileSync(join(files, 'embedder-redis', 'password'), 'utf8');
    const asEmbedder = (...args: string[]) =>
      podman(['exec', '-e', `REDISCLI_AUTH=${password}`, `${net.name}-redis`, 'redis-cli', '--user', env.REDIS_USERNAME!, ...args]).trim();
    expect(asEmbedder('PING')).toBe('PONG');
    expect(asEmbedder('GET', `${env.REDIS_KEY_PREFIX}usage`)).toMatch(/NOPERM/);
    expect(asEmbedder('KEYS', '*')).toMatch(/NOPERM/);
  });
});

describe('after all of the above', () => {
  it("admin's peak memory through all of the above (sign-in, API, CLI, usage) stays within its pod's memory request", () => {
    // VmHWM: the node process's peak resident set (the figure deploy/README.md → Administration gives).
    const status = podman(['exec', adminContainer, 'cat', '/proc/1/status']);
    const mib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) / 1024;
    const request = podOf('ctg-admin').containers[0].resources.requests.memory as string;
    expect(request).toMatch(/^\d+Mi$/);
    const [peak, now, anon] = [mib('VmHWM'), mib('VmRSS'), mib('RssAnon')].map(Math.round);
    console.log(`admin: peak RSS ${peak} MiB, now ${now} MiB (${anon} MiB anonymous), request ${request}`);
    expect(mib('VmHWM')).toBeLessThan(Number.parseInt(request, 10));
  });
});
