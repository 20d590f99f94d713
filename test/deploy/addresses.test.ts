/**
 * Every address a container is configured with reaches something the overlay creates: each
 * `host:port`, `host:port,…` and URL in a container's environment (its ConfigMaps and env, the
 * gateway's render settings as <X>_HOST + <X>_PORT pairs), and in Istio mode the ext_authz
 * provider and the VirtualService destinations, must name a Service of the overlay (short name
 * or <name>.<namespace>[.svc[.cluster.local]]) with that port, whose selector picks a Deployment
 * exposing the target port, and the NetworkPolicies must let the caller's pods reach it. An
 * `authz:9191` where the Service is `ctg-authz`, or a policy that shuts the embedder out of its
 * Sentinels, fails here; and only the gateway may reach authz (the embedder settles on Redis).
 * admin's console is reached by the administrators' ingress controller only, never by the
 * gateway or the mesh's ingress, and its identity provider's port is open to OIDC_CIDR.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../support/stack.js';
import { ENVIRONMENTS, find, kustomize, parseObjects, renderOverlay, workload, type K8sObject } from './kustomize.js';

type Labels = Record<string, string>;
/** Who calls: its pod labels and its namespace's name. */
interface Caller {
  readonly name: string;
  readonly labels: Labels;
  readonly namespace: string;
}
interface Target {
  readonly from: string;
  readonly host: string;
  readonly port: number;
}

const LISTEN = new Set(['0.0.0.0', '::', '']);
const ISTIO_INGRESS: Caller = { name: 'istio ingress gateway', labels: { istio: 'ingressgateway' }, namespace: 'istio-system' };
/** The administrators' way in: the ingress controller the ctg-admin policy names (ADMIN_INGRESS). */
const ADMIN_INGRESS: Caller = {
  name: 'ingress controller',
  labels: { 'app.kubernetes.io/name': 'ingress-nginx' },
  namespace: 'ingress-nginx',
};

const matches = (selector: Labels | undefined, labels: Labels) => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

/** Does a label selector (matchLabels and matchExpressions, as NetworkPolicies write them) select `labels`? */
function selects(selector: any, labels: Labels): boolean {
  const expressions = (selector?.matchExpressions ?? []) as { key: string; operator: string; values?: string[] }[];
  return (
    matches(selector?.matchLabels, labels) &&
    expressions.every(({ key, operator, values = [] }) => {
      if (operator === 'In') return values.includes(labels[key]!);
      if (operator === 'NotIn') return !values.includes(labels[key]!);
      return operator === 'Exists' ? key in labels : !(key in labels);
    })
  );
}

/** The addresses in one container's environment (listen addresses and empty values aside). */
function addressesIn(env: Record<string, string>): { name: string; host: string; port: number }[] {
  const found: { name: string; host: string; port: number }[] = [];
  for (const [name, value] of Object.entries(env)) {
    for (const item of value.split(',')) {
      const m = /^(?:[a-z]+s?:\/\/)?(?:[^@/]*@)?([A-Za-z0-9.-]+):(\d{1,5})\/?$/.exec(item.trim());
      if (m && !LISTEN.has(m[1]!)) found.push({ name, host: m[1]!, port: Number(m[2]) });
    }
    // The renderer's pairs: AUTHZ_HOST + AUTHZ_PORT, EMBEDDER_HOST + EMBEDDER_PORT.
    const pair = /^([A-Z]+)_HOST$/.exec(name);
    if (pair && !LISTEN.has(value) && env[`${pair[1]}_PORT`]) found.push({ name, host: value, port: Number(env[`${pair[1]}_PORT`]) });
  }
  return found;
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet']);

/** Every workload container (init containers too) with its environment and its pod's labels. */
function callers(objects: readonly K8sObject[], namespace: string): { caller: Caller; targets: Target[] }[] {
  return objects
    .filter((o) => WORKLOADS.has(o.kind))
    .flatMap((d) => {
      const pod = d.spec.template;
      return [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].map((c: any) => {
        const env: Record<string, string> = {};
        for (const from of c.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', from.configMapRef.name).data);
        for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
        const caller = { name: `${d.metadata.name}/${c.name}`, labels: pod.metadata.labels, namespace };
        return { caller, targets: addressesIn(env).map((a) => ({ from: `${caller.name} ${a.name}`, host: a.host, port: a.port })) };
      });
    });
}

/** A container's environment from its ConfigMaps. */
function envOf(objects: readonly K8sObject[], container: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', from.configMapRef.name).data);
  return env;
}

/** Does a NetworkPolicy peer list admit `peer` (labels in namespace) on `port`? */
function admits(rules: any[] | undefined, peerKey: 'from' | 'to', peer: Caller, namespace: string, port: number): boolean {
  return (rules ?? []).some((rule) => {
    const portOk = !rule.ports || rule.ports.some((p: any) => p.port === port);
    const peerOk =
      !rule[peerKey] ||
      rule[peerKey].some((p: any) => {
        // An address range is no pod selector: it admits no pod by its labels.
        if (p.ipBlock) return false;
        const ns = p.namespaceSelector
          ? selects(p.namespaceSelector, { 'kubernetes.io/metadata.name': peer.namespace })
          : peer.namespace === namespace;
        return ns && (!p.podSelector || selects(p.podSelector, peer.labels));
      });
    return portOk && peerOk;
  });
}

/** Checks one target; returns what is wrong, or nothing. */
function problem(objects: readonly K8sObject[], namespace: string, caller: Caller, target: Target): string | undefined {
  const names = (s: string) => [s, `${s}.${namespace}`, `${s}.${namespace}.svc`, `${s}.${namespace}.svc.cluster.local`];
  let service = objects.find((o) => o.kind === 'Service' && names(o.metadata.name).includes(target.host));
  // <pod>.<headless Service>: one pod of the StatefulSet that names that Service.
  const [pod, ...rest] = target.host.split('.');
  const set = objects.find((o) => o.kind === 'StatefulSet' && names(o.spec.serviceName).includes(rest.join('.')));
  if (!service && set) {
    const ordinal = Number(pod!.slice(set.metadata.name.length + 1));
    if (!pod!.startsWith(`${set.metadata.name}-`) || !(ordinal < set.spec.replicas))
      return `${target.from}: ${target.host} is no pod of StatefulSet ${set.metadata.name}`;
    service = objects.find((o) => o.kind === 'Service' && o.metadata.name === set.spec.serviceName);
  }
  if (!service) return `${target.from}: ${target.host} names no Service of the overlay`;
  const port = service.spec.ports.find((p: any) => p.port === target.port);
  if (!port) return `${target.from}: Service ${service.metadata.name} has no port ${target.port}`;
  const selector = service.spec.selector;
  const backends = objects.filter((o) => WORKLOADS.has(o.kind) && matches(selector, o.spec.template.metadata.labels));
  if (backends.length === 0) return `${target.from}: Service ${service.metadata.name} selects no workload`;
  for (const d of backends) {
    const containerPort = d.spec.template.spec.containers
      .flatMap((c: any) => c.ports ?? [])
      .find((p: any) => p.name === port.targetPort || p.containerPort === port.targetPort)?.containerPort as number | undefined;
    if (!containerPort) return `${target.from}: ${d.metadata.name} exposes no port ${port.targetPort}`;
    const labels = d.spec.template.metadata.labels as Labels;
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    const egressOk =
      caller.namespace !== namespace ||
      policies
        .filter((p) => selects(p.spec.podSelector, caller.labels))
        .some((p) => admits(p.spec.egress, 'to', { name: d.metadata.name, labels, namespace }, namespace, containerPort));
    if (!egressOk) return `${target.from}: no NetworkPolicy lets ${caller.name} out to ${d.metadata.name}:${containerPort}`;
    const ingressOk = policies
      .filter((p) => selects(p.spec.podSelector, labels))
      .some((p) => admits(p.spec.ingress, 'from', caller, namespace, containerPort));
    if (!ingressOk) return `${target.from}: no NetworkPolicy lets ${caller.name} into ${d.metadata.name}:${containerPort}`;
  }
  return undefined;
}

describe.each(ENVIRONMENTS)('%s', (env) => {
  const namespace = `ctg-${env}`;

  it('every address a container is configured with reaches a Service of the overlay, through the NetworkPolicies', () => {
    const objects = parseObjects(renderOverlay(env));
    const all = callers(objects, namespace);
    const targets = all.flatMap((c) => c.targets.map((t) => ({ caller: c.caller, target: t })));
    // The gateway's two upstreams at least (Redis is a Secret file); the embedder addresses no
    // other component: it settles on Redis, not through authz.
    expect(targets.map((t) => t.target.from).sort()).toEqual(
      expect.arrayContaining(['ctg-gateway/render-config AUTHZ_HOST', 'ctg-gateway/render-config EMBEDDER_HOST']),
    );
    expect(targets.filter((t) => t.caller.name.startsWith('ctg-embedder/')).map((t) => t.target.from)).toEqual([]);
    expect(targets.map(({ caller, target }) => problem(objects, namespace, caller, target)).filter(Boolean)).toEqual([]);
  });

  it('the gateway reaches every replica: its upstreams are headless Services', () => {
    const objects = parseObjects(renderOverlay(env));
    const render = find(objects, 'ConfigMap', 'ctg-gateway-render-env').data!;
    for (const host of [render.AUTHZ_HOST!, render.EMBEDDER_HOST!]) {
      expect(find(objects, 'Service', host).spec.clusterIP, host).toBe('None');
    }
  });

  it("Istio mode: the ext_authz provider, the routes and the embedder's calls all reach their Services", () => {
    const objects = parseObjects(renderOverlay(env, ['istio']));
    const dir = join(repoRoot, 'deploy/istio', env);
    const providers = parse(readFileSync(join(dir, 'istiod-values.yaml'), 'utf8')).meshConfig.extensionProviders as any[];
    const mesh: Target[] = providers.map((p) => ({
      from: `provider ${p.name}`,
      host: p.envoyExtAuthzGrpc.service,
      port: p.envoyExtAuthzGrpc.port,
    }));
    for (const vs of parseObjects(kustomize(dir)).filter((o) => o.kind === 'VirtualService')) {
      for (const route of vs.spec.http)
        for (const r of route.route) mesh.push({ from: `route ${route.name}`, host: r.destination.host, port: r.destination.port.number });
    }
    const problems = [
      ...mesh.map((t) => problem(objects, namespace, ISTIO_INGRESS, t)),
      ...callers(objects, namespace).flatMap((c) => c.targets.map((t) => problem(objects, namespace, c.caller, t))),
    ];
    expect(problems.filter(Boolean)).toEqual([]);
  });

  it('with components/redis-sentinel: authz and the embedder find every Sentinel by a pod name the StatefulSet creates, through the policies', () => {
    const objects = parseObjects(renderOverlay(env, ['redis-sentinel']));
    const all = callers(objects, namespace);
    for (const who of ['ctg-authz/authz', 'ctg-embedder/embedder', 'ctg-admin/admin']) {
      const sentinels = all
        .filter((c) => c.caller.name === who)
        .flatMap((c) => c.targets.filter((t) => t.from.endsWith('REDIS_SENTINELS')));
      expect(sentinels.map((s) => s.host).sort(), who).toEqual([0, 1, 2].map((i) => `ctg-redis-${i}.ctg-redis-headless`));
    }
    const problems = all.flatMap((c) => c.targets.map((t) => problem(objects, namespace, c.caller, t)));
    expect(problems.filter(Boolean)).toEqual([]);
    const authz: Caller = { name: 'authz', labels: { 'app.kubernetes.io/name': 'ctg-authz' }, namespace };
    expect(problem(objects, namespace, authz, { from: 'x', host: 'ctg-redis-3.ctg-redis-headless', port: 26379 })).toMatch(
      /no pod of StatefulSet/,
    );
  });

  it('Prometheus reaches every metrics endpoint it is told about: annotations and PodMonitors match a port its policy opens', () => {
    const objects = parseObjects(renderOverlay(env, ['prometheus-operator']));
    const prometheus: Caller = { name: 'prometheus', labels: { 'app.kubernetes.io/name': 'prometheus' }, namespace: 'monitoring' };
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    const reachable = (labels: Labels, port: number) =>
      policies.filter((p) => selects(p.spec.podSelector, labels)).some((p) => admits(p.spec.ingress, 'from', prometheus, namespace, port));
    const monitors = objects.filter((o) => o.kind === 'PodMonitor');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(['ctg-admin', 'ctg-authz', 'ctg-embedder', 'ctg-gateway']);
    // Each sets the job label deploy/prometheus/alerts.yml selects on.
    const jobs = Object.fromEntries(
      monitors.map((m) => [
        m.metadata.name,
        m.spec.podMetricsEndpoints.map((e: any) => e.relabelings?.find((r: any) => r.targetLabel === 'job')?.replacement),
      ]),
    );
    expect(jobs).toEqual({ 'ctg-admin': ['admin'], 'ctg-authz': ['authz'], 'ctg-embedder': ['embedder'], 'ctg-gateway': ['envoy'] });
    const alerts = readFileSync(join(repoRoot, 'deploy/prometheus/alerts.yml'), 'utf8');
    for (const job of ['envoy', 'authz', 'embedder']) expect(alerts).toMatch(new RegExp(`job(=~?)"[^"]*\\b${job}\\b`));
    // The budget alerts read admin's gauges, scraped as job "admin" (deploy/prometheus/alerts.test.yml).
    expect(alerts).toMatch(/ctg_budget_organizations/);
    expect(readFileSync(join(repoRoot, 'deploy/prometheus/alerts.test.yml'), 'utf8')).toMatch(/ctg_budget_organizations\{job="admin"/);
    // Envoy's stats: the listener's port (ENVOY_STATS_PORT), open to Prometheus only; no token.
    const gateway = find(objects, 'Deployment', 'ctg-gateway').spec.template;
    const statsPort = Number(find(objects, 'ConfigMap', 'ctg-gateway-render-env').data!.ENVOY_STATS_PORT);
    expect(gateway.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(statsPort),
      'prometheus.io/path': '/stats/prometheus',
    });
    const envoyMonitor = monitors.find((m) => m.metadata.name === 'ctg-gateway')!;
    expect(envoyMonitor.spec.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'stats', path: '/stats/prometheus' })]);
    expect(gateway.spec.containers[0].ports).toContainEqual({ name: 'stats', containerPort: statsPort, protocol: 'TCP' });
    expect(reachable(gateway.metadata.labels, statsPort)).toBe(true);
    const stranger: Caller = { name: 'stranger', labels: { app: 'other' }, namespace: 'elsewhere' };
    const gatewayPolicies = policies.filter((p) => selects(p.spec.podSelector, gateway.metadata.labels));
    expect(gatewayPolicies.some((p) => admits(p.spec.ingress, 'from', stranger, namespace, statsPort))).toBe(false);
    for (const name of ['ctg-authz', 'ctg-embedder', 'ctg-admin']) {
      const template = workload(objects, name).spec.template;
      const ports = template.spec.containers[0].ports as { name: string; containerPort: number }[];
      // The annotations' port, and each PodMonitor endpoint's named port.
      const annotated = Number(template.metadata.annotations['prometheus.io/port']);
      expect(
        ports.map((p) => p.containerPort),
        name,
      ).toContain(annotated);
      expect(reachable(template.metadata.labels, annotated), `${name} :${annotated}`).toBe(true);
      const monitor = monitors.find((m) => matches(m.spec.selector.matchLabels, template.metadata.labels))!;
      for (const endpoint of monitor.spec.podMetricsEndpoints) {
        const port = ports.find((p) => p.name === endpoint.port)!;
        expect(port, `${name} port ${endpoint.port}`).toBeDefined();
        expect(port.containerPort).toBe(annotated);
        expect(endpoint.path).toBe(template.metadata.annotations['prometheus.io/path']);
        // /metrics answers 401 without the bearer token: from the Secret the pod itself reads, its
        // key scrape-token (one value: what Prometheus sends) beside metrics-token (the values the
        // pod accepts, two during a rotation; deploy/README.md).
        const { name: secret, key } = endpoint.authorization.credentials;
        expect(endpoint.authorization.type, name).toBe('Bearer');
        expect(key, name).toBe('scrape-token');
        const volume = template.spec.volumes.find((v: any) => v.secret?.secretName === secret);
        const mount = template.spec.containers[0].volumeMounts.find((m: any) => m.name === volume?.name);
        const tokenFile = envOf(objects, template.spec.containers[0]).METRICS_TOKEN_FILE;
        expect(tokenFile, name).toBe(`${mount.mountPath}/${volume.secret.items.find((i: any) => i.key === 'metrics-token').path}`);
      }
    }
    // The gateway's Envoy admin (its stats) stays loopback-only: nothing scrapes it from outside.
    expect(reachable(find(objects, 'Deployment', 'ctg-gateway').spec.template.metadata.labels, 9901)).toBe(false);
  });

  it.each([[], ['istio']])(
    "admin (components %j): the administrators' ingress reaches the console; the gateway, the mesh ingress and strangers do not",
    (...components: string[]) => {
      const objects = parseObjects(renderOverlay(env, components));
      const console_ = { from: 'x', host: `ctg-admin.${namespace}.svc.cluster.local`, port: 9443 };
      expect(problem(objects, namespace, ADMIN_INGRESS, console_)).toBeUndefined();
      const gateway: Caller = { name: 'gateway', labels: { 'app.kubernetes.io/name': 'ctg-gateway' }, namespace };
      const stranger: Caller = { name: 'stranger', labels: { app: 'other' }, namespace: 'elsewhere' };
      for (const caller of [gateway, ISTIO_INGRESS, stranger])
        expect(problem(objects, namespace, caller, console_), caller.name).toMatch(/no NetworkPolicy lets .* (out to|into) ctg-admin:9443/);
      // Nor does anything in the namespace call it: no container is configured with its address.
      const callersOfAdmin = callers(objects, namespace).flatMap((c) => c.targets.filter((t) => t.host.startsWith('ctg-admin')));
      expect(callersOfAdmin).toEqual([]);
    },
  );

  it("admin reaches its identity provider's port at OIDC_CIDR, and nothing else outside but Redis and DNS", () => {
    const objects = parseObjects(renderOverlay(env));
    const env_ = envOf(objects, workload(objects, 'ctg-admin').spec.template.spec.containers[0]);
    const issuer = new URL(env_.OIDC_ISSUER!);
    const port = Number(issuer.port || (issuer.protocol === 'https:' ? 443 : 80));
    expect(issuer.protocol).toBe('https:');
    const labels = workload(objects, 'ctg-admin').spec.template.metadata.labels as Labels;
    const egress = objects
      .filter((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector, labels))
      .flatMap((p) => p.spec.egress ?? [])
      .filter((rule: any) => rule.to?.some((peer: any) => peer.ipBlock));
    expect(egress.some((rule: any) => rule.ports.some((p: any) => p.port === port))).toBe(true);
    // Its ipBlock rules: the provider (:443) and Redis (:6379, :26379), nothing else.
    expect(egress.flatMap((rule: any) => rule.ports.map((p: any) => p.port)).sort()).toEqual([26379, 443, 6379]);
  });

  it('the check is live: a wrong name, a wrong port and a missing policy are each reported', () => {
    const objects = parseObjects(renderOverlay(env));
    const embedder: Caller = { name: 'embedder', labels: { 'app.kubernetes.io/name': 'ctg-embedder' }, namespace };
    expect(problem(objects, namespace, embedder, { from: 'x', host: 'authz', port: 9191 })).toMatch(/names no Service/);
    expect(problem(objects, namespace, embedder, { from: 'x', host: 'ctg-authz', port: 9192 })).toMatch(/no port 9192/);
    expect(problem(objects, namespace, embedder, { from: 'x', host: 'ctg-embedder', port: 8081 })).toMatch(
      /no NetworkPolicy lets embedder (out to|into) ctg-embedder:8081/,
    );
    // The embedder no longer calls authz: its policy lets it out to Redis, not to authz.
    expect(problem(objects, namespace, embedder, { from: 'x', host: 'ctg-authz-pods', port: 9191 })).toMatch(
      /no NetworkPolicy lets embedder out to ctg-authz:9191/,
    );
    const stranger: Caller = { name: 'stranger', labels: { app: 'other' }, namespace: 'elsewhere' };
    expect(problem(objects, namespace, stranger, { from: 'x', host: `ctg-authz.${namespace}.svc.cluster.local`, port: 9191 })).toMatch(
      /into ctg-authz/,
    );
  });
});
