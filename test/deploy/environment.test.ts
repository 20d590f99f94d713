/**
 * The environment variables in the manifests are exactly the ones the config modules read:
 * authz and the embedder (`loadConfig`) and the Envoy renderer (`settingsFromEnv`, run by the
 * gateway's init container). The names are captured by calling each reader with a recording
 * Proxy as its environment, so a setting added to the code fails here until the manifests
 * set it, and a manifest variable no code reads fails too. The values must pass the readers.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
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

// Stand-ins for what only the cluster supplies: Secret values and service-link addresses.
const CLUSTER_VALUES: Record<string, string> = {
  'secret:ctg-redis/url': 'redis://redis.example.internal:6379',
  '$(CTG_AUTHZ_SERVICE_HOST)': '10.96.0.10',
  '$(CTG_EMBEDDER_SERVICE_HOST)': '10.96.0.11',
};

/** The environment a container gets: its ConfigMaps (envFrom) then its env entries. */
function containerEnv(objects: readonly K8sObject[], container: any): Env {
  const env: Env = {};
  for (const from of container.envFrom ?? []) Object.assign(env, find(objects, 'ConfigMap', from.configMapRef.name).data);
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    const value = ref ? CLUSTER_VALUES[`secret:${ref.name}/${ref.key}`] : CLUSTER_VALUES[e.value] ?? e.value;
    if (value === undefined) throw new Error(`no stand-in for ${e.name}`);
    env[e.name] = value;
  }
  return env;
}

/**
 * Variables a reader looks up that the manifests leave unset on purpose, each with the reason.
 * An entry the reader no longer looks up fails the test too, so this list cannot go stale.
 */
const DELIBERATELY_UNSET: Record<string, Record<string, string>> = {
  authz: {
    KEY_HASH_SECRET: 'the secret is mounted as a file (KEY_HASH_SECRET_FILE), never put in the environment',
    REDIS_URL_FILE: "REDIS_URL comes from the ctg-redis Secret; the file is make up's way of handing its own Redis to the CLI",
  },
  embedder: {},
  'render-config': {},
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

  it('the values pass the readers (only the secret file is out of reach here)', () => {
    const authz = recordReads(READERS.authz!.reader, containerEnv(objects, containerOf(objects, 'ctg-authz', 'authz')));
    expect(authz.error).toBeInstanceOf(ConfigError);
    expect((authz.error as ConfigError).problems.filter((p) => !p.startsWith('KEY_HASH_SECRET'))).toEqual([]);
    const embedder = recordReads(READERS.embedder!.reader, containerEnv(objects, containerOf(objects, 'ctg-embedder', 'embedder')));
    expect(embedder.error).toBeUndefined();
    const render = recordReads(READERS['render-config']!.reader, containerEnv(objects, containerOf(objects, 'ctg-gateway', 'render-config')));
    expect(render.error).toBeUndefined();
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
  it('sees a reader\'s conditional reads (authz reads MODEL_DIR only without MODEL_ID)', () => {
    expect(recordReads((e) => loadAuthzConfig(e), {}).names.has('MODEL_DIR')).toBe(true);
    expect(recordReads((e) => loadAuthzConfig(e), { MODEL_ID: 'm' }).names.has('MODEL_DIR')).toBe(false);
  });
});
