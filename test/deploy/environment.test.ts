/**
 * The environment variables in the manifests are exactly the ones the config modules read:
 * authz and the embedder (`loadConfig`), admin (`loadAdminConfig`) and the Envoy renderer
 * (`settingsFromEnv`, run by the gateway's init container). The names are captured by calling each reader with a recording
 * Proxy as its environment, so a setting added to the code fails here until the manifests
 * set it, and a manifest variable no code reads fails too. The values must pass the readers.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAdminConfig } from '../../admin/src/config.js';
import { loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';
import { settingsFromEnv } from '../../envoy/render.js';
import { ENVIRONMENTS, find, parseObjects, readmeYaml, renderOverlay, renderPatched, workload, type K8sObject } from './kustomize.js';

type Env = Record<string, string>;
type Reader = (env: Env) => unknown;

/** Every name `reader` looks up in `env`; its validation error (if any) is returned, not thrown. */
function recordReads(reader: Reader, env: Env): { names: Set<string>; error: unknown } {
  const names = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') names.add(name);
      return typeof name === 'string' ? target[name] : undefined;
    },
    has(target, name) {
      if (typeof name === 'string') names.add(name);
      return name in target;
    },
  });
  try {
    reader(proxy);
    return { names, error: undefined };
  } catch (error) {
    return { names, error };
  }
}

// Stand-ins for what only the cluster supplies (none today: secrets arrive as files).
const CLUSTER_VALUES: Record<string, string> = {};

const standIns = mkdtempSync(join(tmpdir(), 'ctg-env-secrets-'));
afterAll(() => rmSync(standIns, { recursive: true, force: true }));

/** What a mounted Secret key holds, by its file name: enough for the readers' checks. */
function standInFor(file: string): string {
  if (file === 'url') return 'redis://redis.example.org:6379';
  if (file.endsWith('.crt')) return '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  return 'x'.repeat(48);
}

/** `env` with every /etc/ctg/… file setting pointed at a stand-in file of the same name. */
function withSecretFiles(env: Env): Env {
  const out: Env = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (!name.endsWith('_FILE') || !value.startsWith('/etc/ctg/')) continue;
    const file = join(standIns, value);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, standInFor(value.split('/').pop()!));
    out[name] = file;
  }
  return out;
}

/** The environment a container gets: its ConfigMaps (envFrom) then its env entries. */
function containerEnv(objects: readonly K8sObject[], container: any): Env {
  const env: Env = {};
  for (const from of container.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', from.configMapRef.name).data);
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    const value = ref ? CLUSTER_VALUES[`secret:${ref.name}/${ref.key}`] : (CLUSTER_VALUES[e.value] ?? e.value);
    if (value === undefined) throw new Error(`no stand-in for ${e.name}`);
    env[e.name] = value;
  }
  return env;
}

/**
 * Variables a reader looks up that the manifests leave unset on purpose, each with the reason.
 * An entry the reader no longer looks up fails the test too, so this list cannot go stale.
 */
const BATCH_API_OFF = 'the Batch API is off without its key; components/batch-api turns it on with its Secrets';
const NO_CLUSTER =
  'the overlays run one Redis primary (or components/redis-sentinel); a Redis Cluster is set by hand (docs/settlement.md, "Redis Cluster")';
const DELIBERATELY_UNSET: Record<string, Record<string, string>> = {
  authz: {
    REDIS_CLUSTER_NODES: NO_CLUSTER,
    KEY_HASH_SECRET: 'the secret is mounted as a file (KEY_HASH_SECRET_FILE), never put in the environment',
    REDIS_URL: 'the URL may carry a password: it comes from Secret ctg-redis as a file (REDIS_URL_FILE), never the environment',
    REDIS_PASSWORD: "authz logs in with the URL's credentials (Secret ctg-redis)",
    GRANT_SECRET: 'mounted as a file (GRANT_SECRET_FILE, Secret ctg-grant-secret)',
    AUTHZ_CALLER_TOKEN: 'mounted as a file (AUTHZ_CALLER_TOKEN_FILE, Secret ctg-authz-caller-token)',
    METRICS_TOKEN: 'mounted as a file (METRICS_TOKEN_FILE, Secret ctg-metrics-token)',
    EMBEDDER_REDIS_PASSWORD:
      "mounted as a file (EMBEDDER_REDIS_PASSWORD_FILE, Secret ctg-redis-embedder's password): authz creates the embedder's user with it",
  },
  embedder: {
    REDIS_CLUSTER_NODES: NO_CLUSTER,
    GRANT_SECRET: 'mounted as a file (GRANT_SECRET_FILE, Secret ctg-grant-secret)',
    METRICS_TOKEN: 'mounted as a file (METRICS_TOKEN_FILE, Secret ctg-metrics-token)',
    REDIS_URL: 'from Secret ctg-redis-embedder as a file (REDIS_URL_FILE)',
    REDIS_PASSWORD: "the embedder's ACL password is a file (REDIS_PASSWORD_FILE, Secret ctg-redis-embedder)",
    BATCH_KEK: BATCH_API_OFF,
    BATCH_KEK_FILE: BATCH_API_OFF,
    BATCH_STORE: BATCH_API_OFF,
    BATCH_STORE_FILE: BATCH_API_OFF,
    BATCH_RETENTION_DAYS: BATCH_API_OFF,
    BATCH_FILE_MAX_BYTES: BATCH_API_OFF,
    BATCH_FILE_MAX_LINES: BATCH_API_OFF,
    BATCH_WORKERS: BATCH_API_OFF,
    BATCH_LEASE_MS: BATCH_API_OFF,
    BATCH_POLL_MS: BATCH_API_OFF,
    BATCH_SWEEP_MS: BATCH_API_OFF,
  },
  'render-config': {},
  admin: {
    REDIS_CLUSTER_NODES: NO_CLUSTER,
    KEY_HASH_SECRET: 'mounted as a file (KEY_HASH_SECRET_FILE, Secret ctg-key-hash-secret)',
    REDIS_URL: 'from Secret ctg-redis-admin as a file (REDIS_URL_FILE): it may carry a password',
    REDIS_PASSWORD: "admin logs in with the URL's credentials (Secret ctg-redis-admin)",
    AUDIT_SECRET: 'mounted as a file (AUDIT_SECRET_FILE, Secret ctg-audit-secret)',
    OIDC_CLIENT_SECRET: 'mounted as a file (OIDC_CLIENT_SECRET_FILE, Secret ctg-admin-oidc)',
    METRICS_TOKEN: 'mounted as a file (METRICS_TOKEN_FILE, Secret ctg-metrics-token)',
    ADMIN_TOKEN_FILE: "a cluster registers no token file's owner: the first owner is made with the CLI (deploy/README.md → Administration)",
    ADMIN_BOOTSTRAP_NAME: "names only ADMIN_TOKEN_FILE's owner, which a cluster does not use",
    ADMIN_ACTOR_HEADER: 'no longer a setting: read only to refuse it with a clear message',
  },
};

/** File settings a reader only passes on: the container that opens the file (the renderer writes Envoy's paths). */
const READ_ELSEWHERE: Record<string, Record<string, string>> = {
  'render-config': { TLS_CERT_FILE: 'envoy', TLS_KEY_FILE: 'envoy' },
};

/** File settings a process writes, not reads: on a volume of its StatefulSet's claims, mounted writable. */
const WRITTEN: Record<string, readonly string[]> = { admin: ['AUDIT_ANCHOR_FILE'] };

const READERS: Record<string, { deployment: string; container: string; reader: Reader }> = {
  authz: { deployment: 'ctg-authz', container: 'authz', reader: (env) => loadAuthzConfig(env) },
  embedder: { deployment: 'ctg-embedder', container: 'embedder', reader: (env) => loadEmbedderConfig(env) },
  'render-config': { deployment: 'ctg-gateway', container: 'render-config', reader: (env) => settingsFromEnv(env) },
  admin: { deployment: 'ctg-admin', container: 'admin', reader: (env) => loadAdminConfig(env) },
};

function containerOf(objects: readonly K8sObject[], deployment: string, name: string): any {
  const pod = workload(objects, deployment).spec.template.spec;
  return [...pod.containers, ...(pod.initContainers ?? [])].find((c: any) => c.name === name);
}

describe.each(ENVIRONMENTS)('%s', (env) => {
  const objects = parseObjects(renderOverlay(env));

  it.each(Object.keys(READERS))('%s: the manifest sets exactly the variables its config reader reads', (key) => {
    const { deployment, container, reader } = READERS[key]!;
    const given = containerEnv(objects, containerOf(objects, deployment, container));
    const { names: read } = recordReads(reader, given);
    const unset = DELIBERATELY_UNSET[key]!;
    // Everything set is read (no dead or misspelt settings) ...
    expect([...Object.keys(given)].filter((n) => !read.has(n)).sort(), 'set but never read').toEqual([]);
    // ... and everything read is set, or left unset for a stated reason.
    expect([...read].filter((n) => !(n in given) && !(n in unset)).sort(), 'read but not set').toEqual([]);
    for (const name of Object.keys(unset)) {
      expect(read.has(name), `${name} is listed as deliberately unset but is no longer read`).toBe(true);
      expect(given, `${name} is listed as deliberately unset`).not.toHaveProperty(name);
    }
  });

  it('every file a setting names is a key of a Secret volume the container that reads it mounts (or, written, on its claim)', () => {
    for (const [key, { deployment, container: name }] of Object.entries(READERS)) {
      const owner = workload(objects, deployment);
      const pod = owner.spec.template.spec;
      for (const [variable, path] of Object.entries(containerEnv(objects, containerOf(objects, deployment, name)))) {
        if (!variable.endsWith('_FILE') || path === '') continue;
        if (WRITTEN[key]?.includes(variable)) {
          const mount = containerOf(objects, deployment, name).volumeMounts.find((m: any) => path.startsWith(`${m.mountPath}/`));
          expect(mount?.readOnly, `${name} ${variable}=${path}: no writable mount there`).not.toBe(true);
          const claims = (owner.spec.volumeClaimTemplates ?? []).map((c: any) => c.metadata.name);
          expect(claims, `${name} ${variable}=${path}: not on a claim of ${deployment}`).toContain(mount?.name);
          continue;
        }
        const container = containerOf(objects, deployment, READ_ELSEWHERE[key]?.[variable] ?? name);
        const mount = (container.volumeMounts ?? []).find((m: any) => path.startsWith(`${m.mountPath}/`));
        const volume = pod.volumes.find((v: any) => v.name === mount?.name);
        expect(volume?.secret, `${name} ${variable}=${path}: no Secret volume mounted there`).toBeDefined();
        const items = volume.secret.items as { path: string }[] | undefined;
        if (items)
          expect(
            items.map((i) => i.path),
            `${name} ${variable}`,
          ).toContain(path.slice(mount.mountPath.length + 1));
      }
    }
  });

  it('the values pass the readers, with the mounted Secrets standing in as files', () => {
    const result = (key: string, deployment: string) => {
      const given = withSecretFiles(containerEnv(objects, containerOf(objects, deployment, READERS[key]!.container)));
      return recordReads(READERS[key]!.reader, given).error;
    };
    expect(result('authz', 'ctg-authz')).toBeUndefined();
    expect(result('embedder', 'ctg-embedder')).toBeUndefined();
    expect(result('render-config', 'ctg-gateway')).toBeUndefined();
    expect(result('admin', 'ctg-admin')).toBeUndefined();
  });

  it("without Secret ctg-admin-oidc (an optional volume: its folder is empty) admin's reader stops, naming the client secret's file", () => {
    const volume = workload(objects, 'ctg-admin').spec.template.spec.volumes.find((v: any) => v.secret?.secretName === 'ctg-admin-oidc');
    expect(volume.secret.optional).toBe(true);
    const given = withSecretFiles(containerEnv(objects, containerOf(objects, 'ctg-admin', 'admin')));
    const { error } = recordReads((env) => loadAdminConfig(env), {
      ...given,
      OIDC_CLIENT_SECRET_FILE: join(standIns, 'absent/client-secret'),
    });
    expect(String(error)).toMatch(/OIDC_CLIENT_SECRET_FILE: .* does not exist/);
  });

  it('containers that run no config reader get no environment', () => {
    const envoy = containerOf(objects, 'ctg-gateway', 'envoy');
    expect(envoy.env).toBeUndefined();
    expect(envoy.envFrom).toBeUndefined();
  });

  it('authz and the embedder serve the same model id', () => {
    const authz = containerEnv(objects, containerOf(objects, 'ctg-authz', 'authz'));
    const embedder = containerEnv(objects, containerOf(objects, 'ctg-embedder', 'embedder'));
    expect(authz.MODEL_ID).toBeTruthy();
    expect(authz.MODEL_ID).toBe(embedder.MODEL_ID);
  });

  it("admin shares authz's access settings, Redis prefix and key-hash Secret: keys it makes verify there", () => {
    const authz = containerEnv(objects, containerOf(objects, 'ctg-authz', 'authz'));
    const admin = containerEnv(objects, containerOf(objects, 'ctg-admin', 'admin'));
    for (const name of [
      'KEY_PREFIX',
      'KEY_HASH_SECRET_FILE',
      'MODEL_ID',
      'DEFAULT_RPM',
      'DEFAULT_TPM',
      'REDIS_KEY_PREFIX',
      'REDIS_SENTINEL_NAME',
    ])
      expect(admin[name], name).toBe(authz[name]);
    const secretAt = (deployment: string, name: string, path: string) => {
      const pod = workload(objects, deployment).spec.template.spec;
      const mount = containerOf(objects, deployment, name).volumeMounts.find((m: any) => path.startsWith(`${m.mountPath}/`));
      return pod.volumes.find((v: any) => v.name === mount.name).secret.secretName;
    };
    expect(secretAt('ctg-admin', 'admin', admin.KEY_HASH_SECRET_FILE!)).toBe(secretAt('ctg-authz', 'authz', authz.KEY_HASH_SECRET_FILE!));
    // Its own Redis Secret, never authz's: it can be given a Redis user of its own.
    expect(secretAt('ctg-admin', 'admin', admin.REDIS_URL_FILE!)).toBe('ctg-redis-admin');
  });
});

describe.each(ENVIRONMENTS)("%s with deploy/README.md's single sign-on settings", (env) => {
  it("admin's reader accepts them, and NODE_EXTRA_CA_CERTS names a file of the mounted Secret ctg-admin-oidc", () => {
    const snippet = readmeYaml("overlays/<env>/kustomization.yaml, configMapGenerator's ctg-admin-env");
    expect(snippet, "deploy/README.md shows ctg-admin-env's single sign-on literals").toBeDefined();
    const literals = snippet!.split('\n').slice(1).join('\n');
    const objects = parseObjects(renderPatched(env, (k) => k.replace(/^( {6}- ADMIN_PUBLIC_URL=\S+\n)/m, `$1${literals}`)));
    const container = containerOf(objects, 'ctg-admin', 'admin');
    const { NODE_EXTRA_CA_CERTS: ca, ...given } = containerEnv(objects, container);
    // Node reads NODE_EXTRA_CA_CERTS itself, at start: the provider's private CA, from the Secret's ca.crt.
    const mount = container.volumeMounts.find((m: any) => ca?.startsWith(`${m.mountPath}/`));
    const volume = workload(objects, 'ctg-admin').spec.template.spec.volumes.find((v: any) => v.name === mount?.name);
    expect(volume?.secret?.secretName).toBe('ctg-admin-oidc');
    expect(ca!.slice(mount.mountPath.length + 1)).toBe('ca.crt');
    const issuer = /OIDC_ISSUER=(\S+)/.exec(literals)![1];
    const config = loadAdminConfig(withSecretFiles(given));
    expect(config.oidc).toMatchObject({ issuer, clientId: /OIDC_CLIENT_ID=(\S+)/.exec(literals)![1] });
  });
});

describe('the recorder', () => {
  it("sees a reader's conditional reads (authz reads MODEL_DIR only without MODEL_ID)", () => {
    expect(recordReads((e) => loadAuthzConfig(e), {}).names.has('MODEL_DIR')).toBe(true);
    expect(recordReads((e) => loadAuthzConfig(e), { MODEL_ID: 'm' }).names.has('MODEL_DIR')).toBe(false);
  });
});
