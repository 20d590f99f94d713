/**
 * What leaves the namespace, by rendering: every egress rule of every NetworkPolicy names its
 * peers, and the peers are exactly Redis (REDIS_CIDR, or the Redis pods with
 * components/redis-sentinel), the cluster's DNS (kube-system's kube-dns pods), the OTLP collector
 * (its namespace and label), admin's identity provider (OIDC_CIDR) and, inside the namespace,
 * the gateway's two upstreams. No rule admits any address (the Internet included), and
 * REDIS_CIDR, OIDC_CIDR and the administrators' ingress are each one patch in an overlay, as
 * deploy/README.md shows them. What comes in from outside the namespace is listed too.
 * (addresses.test.ts checks that what is configured gets through.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/stack.js';
import { ENVIRONMENTS, parseObjects, readmeYaml, renderOverlay, renderPatched, type K8sObject } from './kustomize.js';

const selector = (s: any): string =>
  [
    ...Object.entries(s?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
    ...(s?.matchExpressions ?? []).map((e: any) => `${e.key} ${e.operator} (${e.values.join(',')})`),
  ].join(',') || '*';

/** One line per egress peer: `policy [pods] -> peer :ports`; an open rule (no `to`) reads `-> ANY`. */
function egress(objects: readonly K8sObject[]): string[] {
  return objects
    .filter((o) => o.kind === 'NetworkPolicy')
    .flatMap((p) =>
      (p.spec.egress ?? []).flatMap((rule: any) => {
        const ports = (rule.ports ?? []).map((x: any) => `${x.port}/${x.protocol}`).join(',') || 'all';
        const peers: string[] = rule.to?.length
          ? rule.to.map((peer: any) =>
              peer.ipBlock
                ? `ipBlock ${peer.ipBlock.cidr}${peer.ipBlock.except ? ` except ${peer.ipBlock.except}` : ''}`
                : `${peer.namespaceSelector ? `ns[${selector(peer.namespaceSelector)}]` : 'namespace'} pods[${selector(peer.podSelector)}]`,
            )
          : ['ANY'];
        return peers.map((peer) => `${p.metadata.name} [${selector(p.spec.podSelector)}] -> ${peer} :${ports}`);
      }),
    )
    .sort();
}

const BASE = [
  'ctg-admin [app.kubernetes.io/name=ctg-admin] -> ipBlock 198.51.100.0/24 :443/TCP',
  'ctg-dns-egress [*] -> ns[kubernetes.io/metadata.name=kube-system] pods[k8s-app=kube-dns] :53/UDP,53/TCP',
  'ctg-gateway [app.kubernetes.io/name=ctg-gateway] -> namespace pods[app.kubernetes.io/name=ctg-authz] :9191/TCP',
  'ctg-gateway [app.kubernetes.io/name=ctg-gateway] -> namespace pods[app.kubernetes.io/name=ctg-embedder] :8081/TCP',
  'ctg-otlp-egress [app.kubernetes.io/name In (ctg-gateway,ctg-authz,ctg-embedder)] -> ns[kubernetes.io/metadata.name=monitoring] pods[app.kubernetes.io/name=opentelemetry-collector] :4318/TCP',
  'ctg-redis-egress [app.kubernetes.io/name In (ctg-authz,ctg-embedder,ctg-admin)] -> ipBlock 192.0.2.0/24 :6379/TCP,26379/TCP',
];

/** One line per ingress peer from outside the namespace: `policy <- peer :ports`; an open rule reads `<- ANY`. */
function ingressFromOutside(objects: readonly K8sObject[]): string[] {
  return objects
    .filter((o) => o.kind === 'NetworkPolicy')
    .flatMap((p) =>
      (p.spec.ingress ?? []).flatMap((rule: any) =>
        (rule.from ?? [{ any: true }])
          .filter((peer: any) => peer.any || peer.namespaceSelector || peer.ipBlock)
          .map(
            (peer: any) =>
              `${p.metadata.name} <- ${peer.any ? 'ANY' : peer.ipBlock ? `ipBlock ${peer.ipBlock.cidr}` : `ns[${selector(peer.namespaceSelector)}] pods[${selector(peer.podSelector)}]`} :${rule.ports.map((x: any) => x.port).join(',')}`,
          ),
      ),
    )
    .sort();
}

const PROMETHEUS = 'ns[kubernetes.io/metadata.name=monitoring] pods[app.kubernetes.io/name=prometheus]';
const INGRESS = [
  'ctg-admin <- ns[kubernetes.io/metadata.name=ingress-nginx] pods[app.kubernetes.io/name=ingress-nginx] :9443',
  `ctg-admin <- ${PROMETHEUS} :9443`,
  `ctg-authz <- ${PROMETHEUS} :9192`,
  `ctg-embedder <- ${PROMETHEUS} :8081`,
  'ctg-gateway <- ANY :8443',
  `ctg-gateway <- ${PROMETHEUS} :9902`,
];

describe.each(ENVIRONMENTS)('%s: what leaves the namespace', (env) => {
  it('every egress rule names its peer: Redis at REDIS_CIDR, kube-dns, the OTLP collector, the gateway upstreams; nothing else', () => {
    expect(egress(parseObjects(renderOverlay(env)))).toEqual(BASE);
  });

  it('with components/redis-sentinel: authz and the embedder reach the Redis pods, and the Redis pods only each other', () => {
    expect(egress(parseObjects(renderOverlay(env, ['redis-sentinel'])))).toEqual(
      [
        ...BASE.filter((line) => !line.startsWith('ctg-redis-egress')),
        'ctg-redis-egress [app.kubernetes.io/name In (ctg-authz,ctg-embedder,ctg-admin)] -> namespace pods[app.kubernetes.io/name=ctg-redis] :6379/TCP,26379/TCP',
        'ctg-redis [app.kubernetes.io/name=ctg-redis] -> namespace pods[app.kubernetes.io/name=ctg-redis] :6379/TCP,26379/TCP',
      ].sort(),
    );
  });

  it('in Istio mode: the same, less the project gateway; the mesh ingress reaches authz and the embedder, never admin', () => {
    const objects = parseObjects(renderOverlay(env, ['istio']));
    expect(egress(objects)).toEqual(BASE.filter((line) => !line.startsWith('ctg-gateway ')));
    const mesh = 'ns[kubernetes.io/metadata.name=istio-system] pods[istio=ingressgateway]';
    expect(ingressFromOutside(objects)).toEqual(
      [...INGRESS.filter((line) => !line.startsWith('ctg-gateway ')), `ctg-authz <- ${mesh} :9191`, `ctg-embedder <- ${mesh} :8081`].sort(),
    );
  });

  it('ingress from outside the namespace: clients to the gateway, administrators through their ingress to admin, Prometheus to the metrics ports, nobody else', () => {
    expect(ingressFromOutside(parseObjects(renderOverlay(env)))).toEqual(INGRESS);
  });

  it("OIDC_CIDR and the administrators' ingress are each one patch in the overlay, as deploy/README.md shows them, and change nothing else", () => {
    const oidc = readmeYaml('overlays/<env>/oidc-egress.yaml');
    const peer = readmeYaml('overlays/<env>/admin-ingress.yaml');
    const entries = readmeYaml("add to overlays/<env>/kustomization.yaml's patches, for admin:");
    expect(oidc, 'deploy/README.md shows overlays/<env>/oidc-egress.yaml').toBeDefined();
    expect(peer, 'deploy/README.md shows overlays/<env>/admin-ingress.yaml').toBeDefined();
    expect(entries, "deploy/README.md shows the overlay's patches: entries for admin").toBeDefined();
    const lines = entries!.split('\n').slice(1).join('\n');
    const edit = (text: string) => text.replace(/^patches:\n/m, `patches:\n${lines}`);
    const rendered = parseObjects(renderPatched(env, edit, { 'oidc-egress.yaml': oidc!, 'admin-ingress.yaml': peer! }));
    const cidr = /value: (\S+)/.exec(oidc!)![1]!;
    expect(egress(rendered)).toEqual(BASE.map((line) => line.replace('198.51.100.0/24', cidr)));
    const namespace = /kubernetes\.io\/metadata\.name: (\S+) \}/.exec(peer!)![1]!;
    const labels = /podSelector: \{ matchLabels: \{ ([^}]+) \} \}/.exec(peer!)![1]!.replace(': ', '=');
    expect(ingressFromOutside(rendered)).toEqual(
      [
        `ctg-admin <- ns[kubernetes.io/metadata.name=${namespace}] pods[${labels}] :9443`,
        ...INGRESS.filter((line) => !line.includes('ingress-nginx')),
      ].sort(),
    );
  });

  it('REDIS_CIDR is one patch in the overlay, as deploy/README.md shows it, and changes nothing else', () => {
    // The README's snippet, written into the overlay as a platform team would.
    const readme = readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8');
    const patch = /```yaml\n(# overlays\/<env>\/redis-egress\.yaml[\s\S]*?)```/.exec(readme)?.[1];
    const entry = /```yaml\n# add to overlays\/<env>\/kustomization\.yaml's patches:\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(patch, 'deploy/README.md shows overlays/<env>/redis-egress.yaml').toBeDefined();
    expect(entry, "deploy/README.md shows the overlay's patches: entry").toBeDefined();
    const edit = (text: string) => text.replace(/^patches:\n/m, `patches:\n${entry}`);
    const rendered = parseObjects(renderPatched(env, edit, { 'redis-egress.yaml': patch! }));
    const cidr = /value: (\S+)/.exec(patch!)![1];
    expect(egress(rendered)).toEqual(BASE.map((line) => line.replace('192.0.2.0/24', cidr!)));
  });

  it('the check is live: an egress rule without a peer reads as ANY', () => {
    const open: K8sObject = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'open' },
      spec: { podSelector: {}, egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] },
    };
    expect(egress([open])).toEqual(['open [*] -> ANY :53/UDP']);
  });
});
