/**
 * The Istio objects under deploy/istio/<env> (no Kubernetes schema covers them): required fields
 * present, and consistent with each other and with the environment's overlay — the CUSTOM policy
 * names a registered envoyExtAuthzGrpc provider that reaches authz, fails closed and sends
 * headers only; no access-log provider (usage is recorded by the embedder through Admission);
 * only the public paths are routed, to the embedder.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { istioEdgeFile } from '../../envoy/istio-edge.js';
import { openapiDocument } from '../../openapi/document.js';
import { repoRoot } from '../support/stack.js';
import { ENVIRONMENTS, find, kustomize, parseObjects, renderOverlay, type K8sObject } from './kustomize.js';

/** The model id a client would name in GET /v1/models/{model}. */
const svcModel = 'bge-large-en-v1.5';

/**
 * The VirtualService routes a request matches, as Istio matches them: any of a route's match
 * blocks, each with every condition; `exact` whole-path, `regex` a full match (RE2, here
 * written so JavaScript reads it the same). Istio takes the first; the test reads the first.
 */
function routesFor(vs: K8sObject, path: string, method: string): any[] {
  const string = (m: any, value: string) =>
    m === undefined ||
    (m.exact !== undefined
      ? m.exact === value
      : m.prefix !== undefined
        ? value.startsWith(m.prefix)
        : new RegExp(`^(?:${m.regex})$`).test(value));
  return vs.spec.http.filter((r: any) => r.match.some((m: any) => string(m.uri, path) && string(m.method, method)));
}

interface Provider {
  name: string;
  envoyExtAuthzGrpc?: any;
  envoyHttpAls?: any;
}

describe.each(ENVIRONMENTS)('%s', (env) => {
  const dir = join(repoRoot, 'deploy/istio', env);
  const istio = parseObjects(kustomize(dir));
  const app = parseObjects(renderOverlay(env, ['istio']));
  const plain = parseObjects(renderOverlay(env));
  const providers: Provider[] = parse(readFileSync(join(dir, 'istiod-values.yaml'), 'utf8')).meshConfig.extensionProviders;
  const host = find(plain, 'Service', 'ctg-gateway').metadata.annotations!['external-dns.alpha.kubernetes.io/hostname']!;
  const namespace = `ctg-${env}`;
  const one = (kind: string): K8sObject => {
    const found = istio.filter((o) => o.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0]!;
  };
  const provider = (name: string) => providers.find((p) => p.name === name);
  const renderEnv = find(plain, 'ConfigMap', 'ctg-gateway-render-env').data!;

  it('every object has its API group, a name, a namespace and a spec', () => {
    const groups: Record<string, string> = {
      Gateway: 'networking.istio.io/v1',
      VirtualService: 'networking.istio.io/v1',
      AuthorizationPolicy: 'security.istio.io/v1',
      EnvoyFilter: 'networking.istio.io/v1alpha3',
    };
    expect(istio.map((o) => o.kind).sort()).toEqual(Object.keys(groups).sort());
    for (const o of istio) {
      expect(o.apiVersion, o.kind).toBe(groups[o.kind]);
      expect(o.metadata.name, o.kind).toMatch(/^[a-z0-9-]+$/);
      expect(o.metadata.namespace, o.kind).toMatch(/^[a-z0-9-]+$/);
      expect(o.spec, o.kind).toBeTruthy();
    }
  });

  it('the ext_authz provider reaches authz, fails closed, and sends headers only', () => {
    const policy = one('AuthorizationPolicy');
    expect(policy.spec.action).toBe('CUSTOM');
    const grpc = provider(policy.spec.provider?.name)?.envoyExtAuthzGrpc;
    expect(grpc, 'the policy names a registered envoyExtAuthzGrpc provider').toBeTruthy();
    expect(grpc.service).toBe(`ctg-authz.${namespace}.svc.cluster.local`);
    expect(grpc.port).toBe(find(app, 'Service', 'ctg-authz').spec.ports[0].port);
    expect(grpc.failOpen).toBe(false);
    expect(grpc.statusOnError).toBe('503');
    expect(grpc.timeout).toBe(`${Number(renderEnv.AUTHZ_TIMEOUT_MS) / 1000}s`);
    // The design decides on headers; a body in the Check would be buffered before the key is known.
    expect(grpc.includeRequestBodyInCheck).toBeUndefined();
  });

  it('the CUSTOM policy covers every request for the host but GET /health, on the ingress gateway', () => {
    const policy = one('AuthorizationPolicy');
    const gateway = one('Gateway');
    expect(policy.spec.selector.matchLabels).toEqual(gateway.spec.selector);
    expect(policy.metadata.namespace).toBe(gateway.metadata.namespace);
    expect(policy.spec.rules).toEqual([{ to: [{ operation: { hosts: [host, `${host}:*`], notPaths: ['/health'] } }] }]);
  });

  it('registers no access-log provider: usage is recorded by the embedder through Admission, mesh or not', () => {
    const all = istio.map((o) => o.kind);
    expect(all).not.toContain('Telemetry');
    expect(providers.every((p: Provider) => p.envoyHttpAls === undefined)).toBe(true);
  });

  it("TLS for the environment's host terminates on the ingress gateway with a referenced certificate", () => {
    const gateway = one('Gateway');
    expect(gateway.spec.selector).toEqual({ istio: 'ingressgateway' });
    expect(gateway.spec.servers).toHaveLength(1);
    const [server] = gateway.spec.servers;
    expect(server.port).toEqual({ number: 443, name: expect.any(String), protocol: 'HTTPS' });
    expect(server.hosts).toEqual([host]);
    expect(server.tls).toEqual({ mode: 'SIMPLE', credentialName: 'ctg-gateway-tls', minProtocolVersion: 'TLSV1_2' });
  });

  it('every public path of the OpenAPI document is routed, to the embedder, and nothing else', () => {
    const vs = one('VirtualService');
    const gateway = one('Gateway');
    expect(vs.metadata.namespace).toBe(namespace);
    expect(vs.spec.hosts).toEqual([host]);
    expect(vs.spec.gateways).toEqual([`${gateway.metadata.namespace}/${gateway.metadata.name}`]);
    // Each documented path with a well-formed id, as a client sends it, reaches a route.
    const ids: Record<string, string> = { model: svcModel, file_id: `file-${'a'.repeat(24)}`, batch_id: `batch_${'b'.repeat(24)}` };
    const documented = Object.keys(openapiDocument.paths).map((p) => p.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!));
    expect(documented).toContain('/v1/batches/batch_bbbbbbbbbbbbbbbbbbbbbbbb/cancel');
    for (const path of documented) {
      const method = path === '/v1/files' ? 'POST' : 'GET';
      expect(routesFor(vs, path, method).length, path).toBeGreaterThan(0);
    }
    // Istio takes the first route that matches: an upload and a listing of /v1/files go
    // different ways (the upload is never retried).
    expect(routesFor(vs, '/v1/files', 'POST')[0].name).toBe('files-upload');
    expect(routesFor(vs, '/v1/files', 'GET')[0].name).toBe('batch-files');
    // The embedder's internal paths and anything undocumented stay unrouted (the mesh's 404).
    for (const path of [
      '/ready',
      '/metrics',
      '/v1/embeddings/x',
      '/v1/files/../ready',
      '/v1/models/a/b',
      '/v1/batches/x',
      '/v1/chat/completions',
    ])
      expect(routesFor(vs, path, 'GET'), path).toEqual([]);
    const embedderPort = find(app, 'Service', 'ctg-embedder').spec.ports[0].port;
    for (const route of vs.spec.http) {
      expect(route.route).toEqual([
        { destination: { host: `ctg-embedder.${namespace}.svc.cluster.local`, port: { number: embedderPort } } },
      ]);
      // Route-level header rules run after ext_authz and would remove the identity headers it set.
      expect(route.headers).toBeUndefined();
    }
    // The routes that run the model or stream a file wait as long as the project's gateway does.
    for (const name of ['embeddings', 'files-upload', 'batch-files', 'batch-batches'])
      expect(vs.spec.http.find((r: any) => r.name === name).timeout, name).toBe(`${renderEnv.EMBEDDER_TIMEOUT_S}s`);
  });

  it("the edge filter is envoy/istio-edge.ts's render, on this host's filter chain of the same gateway pods", () => {
    // A hand edit or a change to the budget's code without `npx tsx envoy/istio-edge.ts` fails here.
    expect(readFileSync(join(dir, 'edge-filter.yaml'), 'utf8')).toBe(istioEdgeFile(env));
    const filter = one('EnvoyFilter');
    const gateway = one('Gateway');
    expect(filter.metadata.namespace).toBe(gateway.metadata.namespace);
    expect(filter.spec.workloadSelector.labels).toEqual(gateway.spec.selector);
    // Scoped by SNI to this host: other hosts served by the same ingress gateway are untouched.
    for (const patch of filter.spec.configPatches) {
      expect(patch.match.context).toBe('GATEWAY');
      expect(patch.match.listener.filterChain.sni).toBe(host);
    }
    // The budget's Lua skips exactly the paths the policy does not check.
    const notPaths: string[] = one('AuthorizationPolicy').spec.rules[0].to[0].operation.notPaths;
    const lua: string = filter.spec.configPatches[1].patch.value.typed_config.default_source_code.inline_string;
    expect(lua).toContain(`local UNCHECKED = { ${notPaths.map((p) => `["${p}"] = true`).join(', ')} }`);
  });

  it('retries are explicit: never a 503 (overloaded) nor a request an embedder may have run', () => {
    // Istio's default (no `retries`) retries 503s; a reset may come after the embedder recorded usage.
    const SAFE = new Set(['connect-failure', 'refused-stream']);
    for (const route of one('VirtualService').spec.http) {
      expect(route.retries, route.name).toBeDefined();
      // A streamed upload cannot be replayed: attempts 0 turns Istio's retries off for it.
      if (route.name === 'files-upload') {
        expect(route.retries).toEqual({ attempts: 0 });
        continue;
      }
      expect(route.retries.attempts, route.name).toBeGreaterThan(0);
      const on = String(route.retries.retryOn).split(',');
      expect(
        on.filter((c) => !SAFE.has(c)),
        route.name,
      ).toEqual([]);
    }
  });
});
