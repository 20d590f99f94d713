/**
 * The environment variables in the manifests are exactly the ones the config modules read:
 * authz and the embedder (`loadConfig`) and the Envoy renderer (`settingsFromEnv`, run by the
 * gateway's init container). The names are captured by calling each reader with a recording
 * Proxy as its environment, so a setting added to the code fails here until the manifests
 * set it, and a manifest variable no code reads fails too. The values must pass the readers.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';
import { settingsFromEnv } from '../../envoy/render.js';
import { ENVIRONMENTS, find, parseObjects, renderOverlay, type K8sObject } from './kustomize.js';

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
const DELIBERATELY_UNSET: Record<string, Record<string, string>> = {
  authz: {
    KEY_HASH_SECRET: 'the secret is mounted as a file (KEY_HASH_SECRET_FILE), never put in the environment',
    REDIS_URL: 'the URL may carry a password: it comes from Secret ctg-redis as a file (REDIS_URL_FILE), never the environment',
    REDIS_PASSWORD: "authz logs in with the URL's credentials (Secret ctg-redis)",
    GRANT_SECRET: 'mounted as a file (GRANT_SECRET_FILE, Secret ctg-grant-secret)',
    AUTHZ_CALLER_TOKEN: 'mounted as a file (AUTHZ_CALLER_TOKEN_FILE, Secret ctg-authz-caller-token)',
    METRICS_TOKEN: 'mounted as a file (METRICS_TOKEN_FILE, Secret ctg-metrics-token)',
  },
  embedder: {
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
};

/** File settings a reader only passes on: the container that opens the file (the renderer writes Envoy's paths). */
const READ_ELSEWHERE: Record<string, Record<string, string>> = {
  'render-config': { TLS_CERT_FILE: 'envoy', TLS_KEY_FILE: 'envoy' },
};

const READERS: Record<string, { deployment: string; container: string; reader: Reader }> = {
  authz: { deployment: 'ctg-authz', container: 'authz', reader: (env) => loadAuthzConfig(env) },
  embedder: { deployment: 'ctg-embedder', container: 'embedder', reader: (env) => loadEmbedderConfig(env) },
  'render-config': { deployment: 'ctg-gateway', container: 'render-config', reader: (env) => settingsFromEnv(env) },
};

function containerOf(objects: readonly K8sObject[], deployment: string, name: string): any {
  const pod = find(objects, 'Deployment', deployment).spec.template.spec;
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

  it('every file a setting names is a key of a Secret volume the container that reads it mounts', () => {
    for (const [key, { deployment, container: name }] of Object.entries(READERS)) {
      const pod = find(objects, 'Deployment', deployment).spec.template.spec;
      for (const [variable, path] of Object.entries(containerEnv(objects, containerOf(objects, deployment, name)))) {
        if (!variable.endsWith('_FILE') || path === '') continue;
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
});

describe('the recorder', () => {
  it("sees a reader's conditional reads (authz reads MODEL_DIR only without MODEL_ID)", () => {
    expect(recordReads((e) => loadAuthzConfig(e), {}).names.has('MODEL_DIR')).toBe(true);
    expect(recordReads((e) => loadAuthzConfig(e), { MODEL_ID: 'm' }).names.has('MODEL_DIR')).toBe(false);
  });
});
