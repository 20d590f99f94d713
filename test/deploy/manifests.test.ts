/**
 * The Kubernetes manifests: both overlays (and the Istio and model-volume variants) render with
 * kubectl kustomize and validate strictly against the Kubernetes 1.37 schemas; every workload
 * holds the invariants a platform team relies on (probes, resources from BENCHMARKS.md, non-root,
 * read-only root, no capabilities, images pinned, secrets only referenced, only the gateway
 * reaching authz and the embedder, drain times consistent with the components' own).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../support/stack.js';
import { pinImages } from '../../scripts/images/pin-overlay.js';
import {
  ENVIRONMENTS,
  find,
  kustomize,
  parseObjects,
  podSpecs,
  readmeYaml,
  renderOverlay,
  renderPatched,
  tool,
  workload,
  type Environment,
  type K8sObject,
} from './kustomize.js';

const rendered: Record<string, string> = {};
const objects = (env: Environment): K8sObject[] => parseObjects(rendered[env]!);
const VARIANTS = [['istio'], ['model-volume'], ['redis-sentinel'], ['queue-autoscaling']] as const;

beforeAll(() => {
  for (const env of ENVIRONMENTS) {
    rendered[env] = renderOverlay(env);
    for (const v of VARIANTS) rendered[`${env}+${v.join('+')}`] = renderOverlay(env, v);
  }
});

const UNITS: Record<string, number> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** Quantities in bytes / millicores, for comparisons. */
function bytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi)?$/.exec(q);
  if (!m) throw new Error(`unexpected memory quantity ${q}`);
  return Number(m[1]) * UNITS[m[2] ?? '']!;
}
function millicores(q: string | number): number {
  const s = String(q);
  return s.endsWith('m') ? Number(s.slice(0, -1)) : Number(s) * 1000;
}

/**
 * Validates several streams in one kubernetes-validate run (a Python start costs seconds on a
 * loaded machine); returns each stream's findings (--quiet prints only failures, naming the file).
 */
function validateAll(streams: Record<string, string>, version = '1.37.0'): { status: number | null; findings: Record<string, string[]> } {
  const dir = mkdtempSync(join(tmpdir(), 'ctg-validate-'));
  try {
    const files = Object.keys(streams).map((name, i) => {
      const file = join(dir, `${i}.yaml`);
      writeFileSync(file, streams[name]!);
      return [name, file] as const;
    });
    const run = spawnSync(tool('kubernetes-validate'), ['--strict', '--quiet', '-k', version, ...files.map(([, f]) => f)], {
      encoding: 'utf8',
    });
    const lines = `${run.stdout}${run.stderr}`.split('\n').filter(Boolean);
    const findings = Object.fromEntries(files.map(([name, file]) => [name, lines.filter((l) => l.includes(`${file} `))]));
    return { status: run.status, findings };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const envOf = (objs: K8sObject[], configMap: string): Record<string, string> => find(objs, 'ConfigMap', configMap).data ?? {};

describe('rendering and schemas', () => {
  it.each(ENVIRONMENTS)('%s renders the whole set of objects, and no Secret', (env) => {
    // Generated ConfigMaps carry a content hash suffix.
    const kinds = objects(env)
      .map((o) => `${o.kind}/${o.kind === 'ConfigMap' ? o.metadata.name.replace(/-[a-z0-9]{10}$/, '') : o.metadata.name}`)
      .sort();
    expect(kinds).toEqual([
      'ConfigMap/ctg-admin-env',
      'ConfigMap/ctg-authz-env',
      'ConfigMap/ctg-embedder-env',
      'ConfigMap/ctg-gateway-render-env',
      'Deployment/ctg-authz',
      'Deployment/ctg-embedder',
      'Deployment/ctg-gateway',
      'HorizontalPodAutoscaler/ctg-embedder',
      `Namespace/ctg-${env}`,
      'NetworkPolicy/ctg-admin',
      'NetworkPolicy/ctg-authz',
      'NetworkPolicy/ctg-default-deny',
      'NetworkPolicy/ctg-dns-egress',
      'NetworkPolicy/ctg-embedder',
      'NetworkPolicy/ctg-gateway',
      'NetworkPolicy/ctg-otlp-egress',
      'NetworkPolicy/ctg-redis-egress',
      'PodDisruptionBudget/ctg-admin',
      'PodDisruptionBudget/ctg-authz',
      'PodDisruptionBudget/ctg-embedder',
      'PodDisruptionBudget/ctg-gateway',
      'Service/ctg-admin',
      'Service/ctg-authz',
      'Service/ctg-authz-pods',
      'Service/ctg-embedder',
      'Service/ctg-embedder-pods',
      'Service/ctg-gateway',
      'StatefulSet/ctg-admin',
    ]);
    for (const o of objects(env)) if (o.kind !== 'Namespace') expect(o.metadata.namespace, o.metadata.name).toBe(`ctg-${env}`);
    // The namespace enforces Pod Security "restricted", so the API server refuses any pod that
    // breaks the security invariants below, whatever a later patch does.
    expect((find(objects(env), 'Namespace', `ctg-${env}`).metadata as any).labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  const STREAMS = [
    'staging',
    'production',
    'staging+istio',
    'production+istio',
    'staging+model-volume',
    'production+model-volume',
    'staging+redis-sentinel',
    'production+redis-sentinel',
    'staging+queue-autoscaling',
    'production+queue-autoscaling',
  ];
  let validation: ReturnType<typeof validateAll>;
  beforeAll(() => {
    const broken = rendered.staging!.replace('revisionHistoryLimit: 5', 'revisionHistoryLimit: 5\n  replicaz: 2');
    validation = validateAll({ ...Object.fromEntries(STREAMS.map((n) => [n, rendered[n]!])), broken });
  });

  it.each(STREAMS)('%s validates strictly against the Kubernetes 1.37 schemas', (name) => {
    expect(validation.findings[name]).toEqual([]);
  });

  it('the stated minimum, Kubernetes 1.30, is the newest any feature in use needs; every variant validates against its schemas', () => {
    // Features whose default-on release is later than 1.25, and how to spot each in a render.
    const FEATURES: { name: string; since: string; used: (text: string) => boolean }[] = [
      { name: 'preStop sleep action (beta, on by default)', since: '1.30', used: (t) => /preStop:\n\s+sleep:/.test(t) },
      { name: 'gRPC probes (GA)', since: '1.27', used: (t) => /\n\s+grpc:\n\s+port:/.test(t) },
    ];
    const all = STREAMS.map((n) => rendered[n]!).join('\n');
    const needed = FEATURES.filter((f) => f.used(all))
      .map((f) => f.since)
      .sort()
      .at(-1);
    expect(needed).toBe('1.30');
    expect(readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8')).toContain(`**Kubernetes ${needed} or later**`);
    const old = validateAll(Object.fromEntries(STREAMS.map((n) => [n, rendered[n]!])), `${needed}.0`);
    for (const n of STREAMS) expect(old.findings[n], n).toEqual([]);
  });

  it('strict validation rejects an unknown field (the check is live)', () => {
    expect(validation.status).not.toBe(0);
    expect(validation.findings.broken!.join('\n')).toMatch(/replicaz/);
    expect(validation.findings.broken!.length).toBeGreaterThan(0);
  });
});

describe.each(ENVIRONMENTS)('%s workloads', (env) => {
  const all = () => podSpecs(objects(env));

  it('every container has startup, readiness and liveness probes', () => {
    for (const { owner, pod } of all()) {
      for (const c of pod.containers) {
        for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe'])
          expect(c[probe], `${owner}/${c.name} ${probe}`).toBeTruthy();
      }
    }
  });

  it('every container, init containers included, has CPU and memory requests and limits, limits >= requests', () => {
    for (const { owner, pod } of all()) {
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const r = c.resources ?? {};
        for (const k of ['cpu', 'memory']) {
          expect(r.requests?.[k], `${owner}/${c.name} requests.${k}`).toBeDefined();
          expect(r.limits?.[k], `${owner}/${c.name} limits.${k}`).toBeDefined();
        }
        expect(millicores(r.limits.cpu)).toBeGreaterThanOrEqual(millicores(r.requests.cpu));
        expect(bytes(r.limits.memory)).toBeGreaterThanOrEqual(bytes(r.requests.memory));
      }
    }
  });

  it('every container runs non-root, read-only root filesystem, no capabilities, no privilege escalation', () => {
    for (const { owner, pod } of all()) {
      expect(pod.securityContext?.runAsNonRoot, owner).toBe(true);
      expect(pod.securityContext?.runAsUser, owner).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken, owner).toBe(false);
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const sc = c.securityContext ?? {};
        expect(sc.runAsNonRoot, `${owner}/${c.name}`).toBe(true);
        expect(sc.readOnlyRootFilesystem, `${owner}/${c.name}`).toBe(true);
        expect(sc.allowPrivilegeEscalation, `${owner}/${c.name}`).toBe(false);
        expect(sc.capabilities?.drop, `${owner}/${c.name}`).toEqual(['ALL']);
        expect(sc.capabilities?.add, `${owner}/${c.name}`).toBeUndefined();
      }
    }
  });

  it('every image is pinned to a registry path, a version tag and a digest', () => {
    for (const { owner, pod } of all()) {
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        expect(c.image, `${owner}/${c.name}`).toMatch(/^[a-z0-9.-]+(\/[a-z0-9._-]+)+:\d+\.\d+\.\d+[a-z0-9.-]*@sha256:[0-9a-f]{64}$/);
      }
    }
  });

  it('secrets are referenced by name and never written; no secret value sits in the environment', () => {
    const text = rendered[env]!;
    expect(objects(env).some((o) => o.kind === 'Secret')).toBe(false);
    for (const name of [
      'ctg-gateway-tls',
      'ctg-key-hash-secret',
      'ctg-redis',
      'ctg-grant-secret',
      'ctg-authz-caller-token',
      'ctg-metrics-token',
      'ctg-redis-embedder',
      'ctg-redis-admin',
      'ctg-audit-secret',
      'ctg-admin-oidc',
    ]) {
      expect(text).toContain(name);
    }
    // Each container mounts exactly the Secrets it needs: the grant key is authz's and the
    // embedder's; the caller token authz's and the gateway's renderer's (not Envoy's own
    // container); the embedder has its own Redis user, never authz's ctg-redis; the audit
    // trail's signing secret and the identity provider's client secret are admin's alone, and
    // admin reads Redis through a Secret of its own.
    const mounted: Record<string, string[]> = {};
    for (const { owner, pod } of podSpecs(objects(env))) {
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        mounted[`${owner}/${c.name}`] = (c.volumeMounts ?? [])
          .map((m: any) => pod.volumes.find((v: any) => v.name === m.name)?.secret?.secretName)
          .filter(Boolean)
          .sort();
      }
    }
    expect(mounted).toEqual({
      'ctg-admin/admin': ['ctg-admin-oidc', 'ctg-audit-secret', 'ctg-key-hash-secret', 'ctg-metrics-token', 'ctg-redis-admin'],
      'ctg-authz/authz': [
        'ctg-authz-caller-token',
        'ctg-grant-secret',
        'ctg-key-hash-secret',
        'ctg-metrics-token',
        'ctg-redis',
        'ctg-redis-embedder',
      ],
      'ctg-embedder/embedder': ['ctg-grant-secret', 'ctg-metrics-token', 'ctg-redis-embedder'],
      'ctg-gateway/envoy': ['ctg-gateway-tls'],
      'ctg-gateway/render-config': ['ctg-authz-caller-token'],
    });
    // Redis's URL (it may carry a password) is a file from Secret ctg-redis, never an env value.
    const pod = find(objects(env), 'Deployment', 'ctg-authz').spec.template.spec;
    const authz = pod.containers[0];
    expect(authz.env).toBeUndefined();
    const volume = pod.volumes.find((v: any) => v.secret?.secretName === 'ctg-redis');
    const mount = authz.volumeMounts.find((m: any) => m.name === volume.name);
    expect(mount.readOnly).toBe(true);
    const authzEnv = envOf(objects(env), 'ctg-authz-env');
    expect(authzEnv.REDIS_URL_FILE).toBe(`${mount.mountPath}/url`);
    for (const optional of ['REDIS_SENTINEL_PASSWORD_FILE', 'REDIS_TLS_CA_FILE']) expect(authzEnv[optional], optional).toBe('');
    expect(authzEnv).not.toHaveProperty('KEY_HASH_SECRET');
    expect(authzEnv).not.toHaveProperty('REDIS_URL');
  });

  it('probes: embedder ready only with its model, authz through gRPC health, Envoy through its own /health, admin ready with Redis', () => {
    const spec = (name: string) => workload(objects(env), name).spec.template.spec.containers[0];
    const embedder = spec('ctg-embedder');
    expect(embedder.readinessProbe.httpGet.path).toBe('/ready');
    expect(embedder.startupProbe.httpGet.path).toBe('/ready');
    expect(embedder.livenessProbe.httpGet.path).toBe('/health');
    const authz = spec('ctg-authz');
    expect(authz.readinessProbe.grpc).toEqual({ port: 9191, service: 'envoy.service.auth.v3.Authorization' });
    const gateway = spec('ctg-gateway');
    for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect(gateway[p].httpGet).toEqual({ path: '/health', port: 'https', scheme: 'HTTPS' });
    }
    // admin/src/http/health.ts: /ready reads Redis; /health only says the process serves (a
    // Redis outage must not restart it), on the listener's own port.
    const admin = spec('ctg-admin');
    expect(admin.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
    expect(admin.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(admin.startupProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(admin.ports).toEqual([
      { name: 'http', containerPort: Number(envOf(objects(env), 'ctg-admin-env').ADMIN_PORT), protocol: 'TCP' },
    ]);
    const health = readFileSync(join(repoRoot, 'admin/src/http/health.ts'), 'utf8');
    for (const path of ['/health', '/ready']) expect(health).toContain(`app.get('${path}'`);
  });

  it('requests and limits cover the memory measured in BENCHMARKS.md', () => {
    const bench = readFileSync(join(repoRoot, 'BENCHMARKS.md'), 'utf8');
    const peak = (what: string) => {
      const m = new RegExp(`${what.replace(/ /g, '\\s+')}\\s+(\\d+) / (\\d+) / (\\d+)`).exec(bench);
      if (!m) throw new Error(`BENCHMARKS.md has no memory figures for ${what}`);
      return Number(m[3]) * 1e6;
    };
    const mem = (name: string) => find(objects(env), 'Deployment', name).spec.template.spec.containers[0].resources;
    const cases: [string, number][] = [
      ['ctg-embedder', peak('embedder alone with the default model')],
      ['ctg-authz', peak('authz')],
      ['ctg-gateway', peak('Envoy')],
    ];
    for (const [name, measured] of cases) {
      expect(bytes(mem(name).requests.memory), name).toBeGreaterThanOrEqual(measured);
      expect(bytes(mem(name).limits.memory), name).toBeGreaterThan(bytes(mem(name).requests.memory));
    }
  });

  it("Envoy's overload heap bound sits below its container's memory limit", () => {
    const limit = find(objects(env), 'Deployment', 'ctg-gateway').spec.template.spec.containers[0].resources.limits.memory;
    const heap = Number(envOf(objects(env), 'ctg-gateway-render-env').ENVOY_MAX_HEAP_MB) * 2 ** 20;
    expect(heap).toBeGreaterThan(0);
    expect(heap).toBeLessThan(bytes(limit));
  });

  it("Envoy runs one worker per CPU of its limit (it would count the node's cores)", () => {
    const envoy = find(objects(env), 'Deployment', 'ctg-gateway').spec.template.spec.containers[0];
    expect(Number(envoy.args[envoy.args.indexOf('--concurrency') + 1]) * 1000).toBe(millicores(envoy.resources.limits.cpu));
  });

  it('the embedder runs one ONNX Runtime thread per CPU it is given (sessions × threads), request = limit', () => {
    const c = find(objects(env), 'Deployment', 'ctg-embedder').spec.template.spec.containers[0];
    const vars = envOf(objects(env), 'ctg-embedder-env');
    expect(millicores(c.resources.requests.cpu)).toBe(millicores(c.resources.limits.cpu));
    // Both set: unset, they would be derived from the pod's limit rounded down (contract/usable-cores.ts).
    expect(Number(vars.MODEL_SESSIONS) * Number(vars.ORT_INTRA_OP_THREADS) * 1000).toBe(millicores(c.resources.limits.cpu));
  });

  it('the HPA alone sizes the embedder, on CPU; every component has a PodDisruptionBudget', () => {
    const hpa = find(objects(env), 'HorizontalPodAutoscaler', 'ctg-embedder').spec;
    expect(hpa.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'ctg-embedder' });
    expect(hpa.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    expect(find(objects(env), 'Deployment', 'ctg-embedder').spec.replicas).toBeUndefined();
    for (const name of ['ctg-gateway', 'ctg-authz', 'ctg-embedder', 'ctg-admin']) {
      const pdb = find(objects(env), 'PodDisruptionBudget', name).spec;
      expect(pdb.selector.matchLabels).toEqual(workload(objects(env), name).spec.selector.matchLabels);
    }
    // admin's one pod: a budget of minAvailable 1 would block every node drain.
    expect(find(objects(env), 'PodDisruptionBudget', 'ctg-admin').spec).toMatchObject({ maxUnavailable: 1 });
  });

  it('only the gateway reaches the embedder and authz, Prometheus their metrics; only the gateway is exposed', () => {
    const objs = objects(env);
    const deny = find(objs, 'NetworkPolicy', 'ctg-default-deny').spec;
    expect(deny).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    const pods = (name: string) => ({ podSelector: { matchLabels: { 'app.kubernetes.io/name': name } } });
    const prometheus = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    };
    expect(find(objs, 'NetworkPolicy', 'ctg-authz').spec.ingress).toEqual([
      { from: [pods('ctg-gateway')], ports: [{ port: 9191, protocol: 'TCP' }] },
      { from: [prometheus], ports: [{ port: 9192, protocol: 'TCP' }] },
    ]);
    expect(find(objs, 'NetworkPolicy', 'ctg-embedder').spec.ingress).toEqual([
      { from: [pods('ctg-gateway')], ports: [{ port: 8081, protocol: 'TCP' }] },
      { from: [prometheus], ports: [{ port: 8081, protocol: 'TCP' }] },
    ]);
    for (const name of ['ctg-authz', 'ctg-embedder']) expect(find(objs, 'Service', name).spec.type).toBe('ClusterIP');
    // What authz and the embedder may reach is in the shared egress policies
    // (network-policies.test.ts): their own policies open nothing outwards.
    for (const name of ['ctg-authz', 'ctg-embedder']) expect(find(objs, 'NetworkPolicy', name).spec.policyTypes).toEqual(['Ingress']);
    expect(objs.filter((o) => o.kind === 'Service' && (o.spec.type ?? 'ClusterIP') !== 'ClusterIP').map((o) => o.metadata.name)).toEqual([
      'ctg-gateway',
    ]);
    // Envoy's admin port is loopback only: never a container or Service port.
    expect(rendered[env]).not.toMatch(/port: 9901|containerPort: 9901/);
  });

  it('admin: one pod, its audit checkpoints on a claim of its own that outlives the set; in only from administrators and Prometheus', () => {
    const objs = objects(env);
    const set = workload(objs, 'ctg-admin');
    expect(set.kind).toBe('StatefulSet');
    expect(set.spec.replicas).toBe(1);
    expect(set.spec.serviceName).toBe('ctg-admin');
    // The claim stays when the set is deleted or scaled down, and it is no resource of the
    // overlay: `kubectl delete -k` leaves the checkpoints.
    expect(set.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Retain', whenScaled: 'Retain' });
    expect(objs.filter((o) => o.kind === 'PersistentVolumeClaim')).toEqual([]);
    expect(set.spec.volumeClaimTemplates).toHaveLength(1);
    const claim = set.spec.volumeClaimTemplates[0];
    expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
    const pod = set.spec.template.spec;
    const mount = pod.containers[0].volumeMounts.find((m: any) => m.name === claim.metadata.name);
    expect(envOf(objs, 'ctg-admin-env').AUDIT_ANCHOR_FILE!.startsWith(`${mount.mountPath}/`)).toBe(true);
    expect(mount.readOnly).toBeUndefined();
    // Written by the image's user through the pod's group (fsGroup owns the volume).
    expect(pod.securityContext).toMatchObject({ runAsUser: 10005, runAsGroup: 10005, fsGroup: 10005 });
    // The audit trail's signing secret: admin's pod alone.
    for (const { owner, pod: other } of podSpecs(objs))
      if (owner !== 'ctg-admin') expect(JSON.stringify(other.volumes ?? []), owner).not.toContain('ctg-audit-secret');
    expect(find(objs, 'Service', 'ctg-admin').spec).toMatchObject({
      type: 'ClusterIP',
      selector: set.spec.selector.matchLabels,
      ports: [{ name: 'http', port: 9443, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' }],
    });
    // In: the administrators' ingress controller and Prometheus, on the listener's port; never
    // the gateway, which no rule of the namespace lets out towards it either.
    const policy = find(objs, 'NetworkPolicy', 'ctg-admin').spec;
    expect(policy.podSelector).toEqual({ matchLabels: set.spec.selector.matchLabels });
    expect(policy.ingress).toEqual([
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
          },
        ],
        ports: [{ port: 9443, protocol: 'TCP' }],
      },
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
          },
        ],
        ports: [{ port: 9443, protocol: 'TCP' }],
      },
    ]);
    expect(JSON.stringify(find(objs, 'NetworkPolicy', 'ctg-gateway').spec.egress)).not.toContain('ctg-admin');
  });

  it("termination grace periods cover each component's drain", () => {
    const objs = objects(env);
    const pod = (name: string) => find(objs, 'Deployment', name).spec.template.spec;
    const render = envOf(objs, 'ctg-gateway-render-env');
    const routeTimeout = Number(render.EMBEDDER_TIMEOUT_S);
    // Gateway: drain hook bound = the route timeout (the longest a request may run), on the admin port.
    const gw = pod('ctg-gateway');
    const envoy = gw.containers[0];
    const [, port, seconds] = envoy.lifecycle.preStop.exec.command;
    expect(port).toBe(render.ENVOY_ADMIN_PORT);
    expect(Number(seconds)).toBe(routeTimeout);
    expect(envoy.args[envoy.args.indexOf('--drain-time-s') + 1]).toBe(seconds);
    expect(gw.terminationGracePeriodSeconds).toBeGreaterThan(Number(seconds));
    // Embedder: preStop sleep, then in-flight requests (bounded by the route timeout) finish.
    const emb = pod('ctg-embedder');
    expect(emb.terminationGracePeriodSeconds).toBeGreaterThan(emb.containers[0].lifecycle.preStop.sleep.seconds + routeTimeout);
    // The embedder's own drain period covers the route timeout and ends before the kubelet's SIGKILL.
    const drain = Number(
      readFileSync(join(repoRoot, 'deploy/kubernetes/base/embedder.env'), 'utf8').match(/^EMBEDDER_DRAIN_S=(\d+)$/m)![1],
    );
    expect(drain).toBeGreaterThanOrEqual(routeTimeout);
    expect(emb.containers[0].lifecycle.preStop.sleep.seconds + drain).toBeLessThan(emb.terminationGracePeriodSeconds);
    // authz: preStop sleep, then main.ts's own shutdown grace before it forces the server closed.
    const main = readFileSync(join(repoRoot, 'authz/src/main.ts'), 'utf8');
    const graceMs = Number(/SHUTDOWN_GRACE_MS = ([\d_]+)/.exec(main)![1]!.replace(/_/g, ''));
    const az = pod('ctg-authz');
    expect(az.terminationGracePeriodSeconds).toBeGreaterThan(az.containers[0].lifecycle.preStop.sleep.seconds + graceMs / 1000);
  });
});

/** Every container of every workload in a rendered stream, init containers included. */
function containersOf(text: string): { owner: string; pod: any; c: any }[] {
  return parseObjects(text)
    .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
    .flatMap((o) => {
      const pod = o.spec.template.spec;
      return [...pod.containers, ...(pod.initContainers ?? [])].map((c: any) => ({ owner: o.metadata.name, pod, c }));
    });
}

describe("checkov's Kubernetes findings, encoded (CKV_K8S_43 digest, CKV_K8S_15 pull policy, CKV_K8S_40 high UID)", () => {
  const STREAMS = ['', '+istio', '+model-volume', '+redis-sentinel', '+queue-autoscaling'].flatMap((v) =>
    ENVIRONMENTS.map((e) => `${e}${v}`),
  );

  it.each(STREAMS)('%s: every image by digest, pulled only when not present, by a user of 10000 or above', (name) => {
    const findings: string[] = [];
    for (const { owner, pod, c } of containersOf(rendered[name]!)) {
      const where = `${owner}/${c.name}`;
      if (!/@sha256:[0-9a-f]{64}$/.test(c.image)) findings.push(`${where}: CKV_K8S_43 image ${c.image} has no digest`);
      // With a digest, the image cannot change under its name: IfNotPresent is exact and spares the registry.
      if (c.imagePullPolicy !== 'IfNotPresent') findings.push(`${where}: imagePullPolicy ${c.imagePullPolicy}`);
      const uid = c.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
      const gid = c.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup;
      if (!(uid >= 10_000) || !(gid >= 10_000)) findings.push(`${where}: CKV_K8S_40 runs as ${uid}:${gid}`);
      if (!(pod.securityContext?.fsGroup >= 10_000)) findings.push(`${where}: fsGroup ${pod.securityContext?.fsGroup}`);
    }
    expect(findings).toEqual([]);
  });

  it('the check is live: a tag without a digest, a low UID and no pull policy are each found', () => {
    const text = rendered.staging!.replace(/@sha256:0{64}/, '').replace('runAsUser: 10001', 'runAsUser: 1000');
    const bad = containersOf(text.replace(/^ *imagePullPolicy: IfNotPresent\n/m, ''));
    expect(bad.some(({ c }) => !c.image.includes('@sha256:'))).toBe(true);
    expect(bad.some(({ pod }) => pod.securityContext.runAsUser === 1000)).toBe(true);
    expect(bad.some(({ c }) => c.imagePullPolicy === undefined)).toBe(true);
  });

  it('scripts/images/pin-overlay.ts writes tag and digest into an overlay, and the render names the image by both', () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    const kustomization = readFileSync(join(repoRoot, 'deploy/kubernetes/overlays/staging/kustomization.yaml'), 'utf8');
    const pinned = pinImages(kustomization, { 'ctg-authz': `registry.internal:5000/team/authz:0.2.0@${digest}` });
    const objs = parseObjects(renderPatched('staging', () => pinned));
    expect(find(objs, 'Deployment', 'ctg-authz').spec.template.spec.containers[0].image).toBe(
      `registry.internal:5000/team/authz:0.2.0@${digest}`,
    );
    // The comments stay (the file is the platform team's), and a reference without a digest is refused.
    expect(pinned).toContain('# Every image by tag and digest');
    expect(() => pinImages(kustomization, { 'ctg-authz': 'registry.internal/team/authz:0.2.0' })).toThrow(/@sha256/);
    expect(() => pinImages(kustomization, { 'ctg-nothing': `r.io/x/y:1@${digest}` })).toThrow(/no ctg-nothing/);
  });

  it("deploy/README.md's pin-overlay command, run as written on a copy of the overlay, pins all four images", () => {
    const readme = readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8');
    const command = /```sh\n\s*(npx tsx scripts\/images\/pin-overlay\.ts[\s\S]*?)```/.exec(readme)?.[1];
    expect(command, 'deploy/README.md shows the pin-overlay command').toBeDefined();
    const copy = mkdtempSync(join(tmpdir(), 'ctg-pin-'));
    try {
      cpSync(join(repoRoot, 'deploy/kubernetes'), copy, { recursive: true });
      const digest = `sha256:${'cd'.repeat(32)}`;
      const script = command!.replaceAll('deploy/kubernetes/', `${copy}/`).replaceAll('sha256:<digest>', digest);
      const run = spawnSync('bash', ['-c', script], { cwd: repoRoot, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const images = parseObjects(kustomize(join(copy, 'overlays/staging')))
        .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
        .flatMap((o) => o.spec.template.spec.containers.map((c: any) => c.image))
        .sort();
      expect(images).toEqual(
        [
          `registry.example.org/ctg/admin:0.1.0@${digest}`,
          `registry.example.org/ctg/authz:0.1.0@${digest}`,
          `registry.example.org/ctg/embedder:0.1.0-minilm@${digest}`,
          `registry.example.org/ctg/gateway:0.1.0@${digest}`,
        ].sort(),
      );
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe("the console's way in, as deploy/README.md shows it", () => {
  it("its Ingress, added to the staging overlay, validates strictly and routes the console's own host (ADMIN_PUBLIC_URL) over TLS to Service ctg-admin", () => {
    const route = readmeYaml('overlays/<env>/admin-route.yaml');
    const entry = readmeYaml("add to overlays/<env>/kustomization.yaml's resources, for the console:");
    expect(route, 'deploy/README.md shows overlays/<env>/admin-route.yaml').toBeDefined();
    expect(entry, "deploy/README.md shows the overlay's resources: entry").toBeDefined();
    const lines = entry!.split('\n').slice(1).join('\n');
    const text = renderPatched('staging', (k) => k.replace(/^resources:\n/m, `resources:\n${lines}`), { 'admin-route.yaml': route! });
    const objs = parseObjects(text);
    const ingress = find(objs, 'Ingress', 'ctg-admin');
    expect(ingress.metadata.namespace).toBe('ctg-staging');
    const origin = new URL(envOf(objs, 'ctg-admin-env').ADMIN_PUBLIC_URL!);
    expect(origin.protocol).toBe('https:');
    expect(ingress.spec.rules.map((r: any) => r.host)).toEqual([origin.host]);
    expect(ingress.spec.tls).toEqual([{ hosts: [origin.host], secretName: 'ctg-admin-tls' }]);
    // Its own host: never the gateway's.
    expect(origin.host).not.toBe(find(objs, 'Service', 'ctg-gateway').metadata.annotations!['external-dns.alpha.kubernetes.io/hostname']);
    const backend = ingress.spec.rules[0].http.paths[0].backend.service;
    expect(backend.name).toBe('ctg-admin');
    expect(find(objs, 'Service', 'ctg-admin').spec.ports.map((p: any) => p.name)).toContain(backend.port.name);
    expect(validateAll({ route: text }).findings.route).toEqual([]);
  });
});

describe('the two environments', () => {
  const host = (env: Environment) => find(objects(env), 'Service', 'ctg-gateway').metadata.annotations ?? {};

  it('each has its own host name, and its base URL is https on that host', () => {
    const hosts = ENVIRONMENTS.map((env) => host(env)['external-dns.alpha.kubernetes.io/hostname']);
    expect(new Set(hosts).size).toBe(2);
    for (const env of ENVIRONMENTS) {
      expect(host(env)['ctg.example.org/base-url']).toBe(`https://${host(env)['external-dns.alpha.kubernetes.io/hostname']}`);
    }
  });

  it('production runs more replicas and more embedder CPU than staging', () => {
    const replicas = (env: Environment, name: string) => find(objects(env), 'Deployment', name).spec.replicas;
    for (const name of ['ctg-gateway', 'ctg-authz']) expect(replicas('production', name)).toBeGreaterThan(replicas('staging', name));
    const hpa = (env: Environment) => find(objects(env), 'HorizontalPodAutoscaler', 'ctg-embedder').spec;
    expect(hpa('production').minReplicas).toBeGreaterThan(hpa('staging').minReplicas);
    expect(hpa('production').maxReplicas).toBeGreaterThan(hpa('staging').maxReplicas);
    const cpu = (env: Environment) =>
      find(objects(env), 'Deployment', 'ctg-embedder').spec.template.spec.containers[0].resources.limits.cpu;
    expect(millicores(cpu('production'))).toBeGreaterThan(millicores(cpu('staging')));
  });
});

describe('variants', () => {
  it.each(ENVIRONMENTS)('%s with components/istio: no project gateway; only the ingress gateway reaches authz and the embedder', (env) => {
    const objs = parseObjects(rendered[`${env}+istio`]!);
    expect(objs.filter((o) => o.metadata.name.startsWith('ctg-gateway'))).toEqual([]);
    const ingress = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'istio-system' } },
      podSelector: { matchLabels: { istio: 'ingressgateway' } },
    };
    // The ingress gateway takes the project gateway's place, and is the only caller of either.
    expect(find(objs, 'NetworkPolicy', 'ctg-authz').spec.ingress[0].from).toEqual([ingress]);
    expect(find(objs, 'NetworkPolicy', 'ctg-embedder').spec.ingress[0].from).toEqual([ingress]);
    // Istio's provider sends no caller token: authz is told so, and the token's Secret is not mounted.
    const authzEnv = envOf(objs, 'ctg-authz-env');
    expect(authzEnv.AUTHZ_CALLER_AUTH).toBe('mesh');
    expect(authzEnv.AUTHZ_CALLER_TOKEN_FILE).toBe('');
    const authzPod = find(objs, 'Deployment', 'ctg-authz').spec.template.spec;
    expect(JSON.stringify(authzPod)).not.toContain('caller-token');
    expect(envOf(objects(env), 'ctg-authz-env').AUTHZ_CALLER_AUTH).toBe('token');
  });

  it.each(ENVIRONMENTS)(
    '%s with components/redis-sentinel: Redis with Sentinel, passwords and TLS from Secrets, restricted like the rest',
    (env) => {
      const objs = parseObjects(rendered[`${env}+redis-sentinel`]!);
      const set = find(objs, 'StatefulSet', 'ctg-redis');
      expect(set.spec.replicas).toBe(3);
      const pod = set.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      for (const c of [...pod.containers, ...pod.initContainers]) {
        expect(c.securityContext, c.name).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.image, c.name).toMatch(/^docker\.io\/library\/redis:\d+\.\d+\.\d+-bookworm@sha256:[0-9a-f]{64}$/);
        expect(c.resources.limits, c.name).toBeDefined();
        // No password in argv or env: files from the Secrets, REDISCLI_AUTH inside the probes.
        expect(JSON.stringify([c.command, c.args, c.env]), c.name).not.toMatch(/-a |--pass|PASSWORD=/);
      }
      for (const c of pod.containers)
        for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect(c[p], `${c.name} ${p}`).toBeTruthy();
      // Their own Secrets only: not the embedder's password (authz creates its user).
      expect(
        pod.volumes
          .filter((v: any) => v.secret)
          .map((v: any) => v.secret.secretName)
          .sort(),
      ).toEqual(['ctg-redis-auth', 'ctg-redis-tls']);
      expect(find(objs, 'Service', 'ctg-redis-headless').spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
      expect(find(objs, 'PodDisruptionBudget', 'ctg-redis').spec.maxUnavailable).toBe(1);
      // authz is pointed at the Sentinels, with their password and the CA from Secret ctg-redis's files.
      const authzEnv = envOf(objs, 'ctg-authz-env');
      expect(authzEnv.REDIS_SENTINELS!.split(',')).toHaveLength(3);
      expect(authzEnv.REDIS_SENTINEL_PASSWORD_FILE).toBe('/etc/ctg/redis/sentinel-password');
      expect(authzEnv.REDIS_TLS_CA_FILE).toBe('/etc/ctg/redis/ca.crt');
      // ... and the embedder too, as its own user, with the same from Secret ctg-redis-embedder.
      const embedderEnv = envOf(objs, 'ctg-embedder-env');
      // ... and admin, from its own Secret ctg-redis-admin's files, mounted where authz mounts ctg-redis.
      const adminEnv = envOf(objs, 'ctg-admin-env');
      for (const name of ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD_FILE', 'REDIS_TLS_CA_FILE']) {
        expect(embedderEnv[name], name).toBe(authzEnv[name]);
        expect(adminEnv[name], name).toBe(authzEnv[name]);
      }
      // The start script and the Sentinel's are in the rendered ConfigMap, as the pods mount it,
      // and the Sentinel container runs its script.
      const scripts = find(objs, 'ConfigMap', 'ctg-redis-start').data!;
      for (const name of ['start.sh', 'sentinel.sh'])
        expect(scripts[name], name).toBe(readFileSync(join(repoRoot, 'deploy/kubernetes/components/redis-sentinel', name), 'utf8'));
      const redisPod = find(objs, 'StatefulSet', 'ctg-redis').spec.template.spec;
      const sentinel = redisPod.containers.find((c: any) => c.name === 'sentinel');
      expect(sentinel.command).toEqual(['sh', '/etc/ctg/redis-start/sentinel.sh']);
    },
  );

  it("components/redis-sentinel leaves the embedder's ACL user to authz (its rules name the settlement's secret namespace)", () => {
    const start = readFileSync(join(repoRoot, 'deploy/kubernetes/components/redis-sentinel/start.sh'), 'utf8');
    expect(start).not.toMatch(/^\s*echo "user /m);
    for (const env of ENVIRONMENTS) {
      const objs = parseObjects(rendered[`${env}+redis-sentinel`]!);
      expect(envOf(objs, 'ctg-authz-env').REDIS_KEY_PREFIX).toBe(envOf(objs, 'ctg-embedder-env').REDIS_KEY_PREFIX);
    }
  });

  it.each(ENVIRONMENTS)(
    "%s with components/queue-autoscaling: the HPA scales on the embedder's queue (a Pods metric the adapter serves) beside CPU",
    (env) => {
      const hpa = find(parseObjects(rendered[`${env}+queue-autoscaling`]!), 'HorizontalPodAutoscaler', 'ctg-embedder').spec;
      const base = find(objects(env), 'HorizontalPodAutoscaler', 'ctg-embedder').spec;
      expect(hpa.metrics).toEqual([
        ...base.metrics,
        { type: 'Pods', pods: { metric: { name: 'embedder_queue_tokens' }, target: { type: 'AverageValue', averageValue: '8192' } } },
      ]);
      // Everything else (the overlay's min/max, the behaviour, the target) is the base's.
      expect({ ...hpa, metrics: undefined }).toEqual({ ...base, metrics: undefined });
      // The target: a few batches per pod, below what the queue holds before 503 overloaded.
      const env_ = envOf(objects(env), 'ctg-embedder-env');
      const target = Number(hpa.metrics[1].pods.target.averageValue);
      expect(target).toBeGreaterThanOrEqual(Number(env_.BATCH_MAX_TOKENS));
      expect(target).toBeLessThan(Number(env_.QUEUE_MAX_TOKENS) / 2);
      // The adapter's rule serves exactly that name, per pod and namespace, from the gauge the embedder exports.
      const values = parse(
        readFileSync(join(repoRoot, 'deploy/kubernetes/components/queue-autoscaling/prometheus-adapter-values.yaml'), 'utf8'),
      );
      const rule = values.rules.custom.find((r: any) => r.name.as === 'embedder_queue_tokens');
      expect(rule.seriesQuery).toMatch(/^embedder_queue_tokens\{/);
      expect(rule.resources.overrides).toEqual({ namespace: { resource: 'namespace' }, pod: { resource: 'pod' } });
      expect(readFileSync(join(repoRoot, 'embedder/src/telemetry/metrics.ts'), 'utf8')).toContain("name: 'embedder_queue_tokens'");
    },
  );

  it.each(ENVIRONMENTS)('%s with components/model-volume: the model-less image, the model read-only from the claim', (env) => {
    const pod = find(parseObjects(rendered[`${env}+model-volume`]!), 'Deployment', 'ctg-embedder').spec.template.spec;
    const c = pod.containers[0];
    expect(c.image).toMatch(/^registry\.example\.org\/ctg\/embedder:\d+\.\d+\.\d+@sha256:[0-9a-f]{64}$/);
    expect(c.volumeMounts).toContainEqual({ name: 'models', mountPath: '/models', readOnly: true });
    expect(pod.volumes).toContainEqual({ name: 'models', persistentVolumeClaim: { claimName: 'ctg-models', readOnly: true } });
    expect(envOf(parseObjects(rendered[`${env}+model-volume`]!), 'ctg-embedder-env').MODEL_DIR).toBe('/models/default');
  });
});
