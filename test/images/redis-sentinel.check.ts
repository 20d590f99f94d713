/**
 * components/redis-sentinel as it runs: the StatefulSet's three pods (its init container runs
 * start.sh, then redis-server and redis-sentinel share the pod's network), each with the
 * Secrets as files, TLS only and passwords, on a podman network where every pod's name
 * (ctg-redis-N.ctg-redis-headless) resolves. Debian's redis-server stands in for the official
 * image (same 7.x configuration). Then authz, with the overlay's environment, reaches the
 * primary through the Sentinels; the primary's pod is lost, a replica is promoted, authz
 * follows, and the lost pod comes back as a replica of the new primary.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localImage } from '../../scripts/images/image-tag.js';
import { find, parseObjects, renderOverlay } from '../deploy/kustomize.js';
import { waitFor } from '../support/process.js';
import { makeStackDir, removeStackDir, type StackDir } from '../support/stack.js';
import { type ContainerSpec, PodNetwork, podman, runAdminCli } from './podman.js';

const REDIS_IMAGE = 'localhost/ctg-test-redis:bookworm';
const AUTHZ_IMAGE = localImage('authz');
const ADMIN_IMAGE = localImage('admin');
/** The admin image's user (deploy/admin/Containerfile). */
const ADMIN_UID = 10005;
const objects = parseObjects(renderOverlay('staging', ['redis-sentinel']));
const set = find(objects, 'StatefulSet', 'ctg-redis');
const pod = set.spec.template.spec;
const container = (name: string) => pod.containers.find((c: any) => c.name === name);
const password = randomBytes(16).toString('hex');
const sentinelPassword = randomBytes(16).toString('hex');
const embedderPassword = randomBytes(16).toString('hex');
const embedderUser = find(objects, 'ConfigMap', 'ctg-embedder-env').data!.REDIS_USERNAME!;

let net: PodNetwork;
let dirs: StackDir;
let files: string;
let redisUser: string;

/** Files owned by `uid`, mode 0440, as a Secret volume mounts them. */
function secretDir(dir: string, entries: Record<string, string>, uid: number, gid: number): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(entries)) {
    writeFileSync(join(dir, name), content);
    chownSync(join(dir, name), uid, gid);
    chmodSync(join(dir, name), 0o440);
  }
  return dir;
}

/** The StatefulSet's mounts, from the test's directories. */
function mounts(ordinal: number): { mounts: Record<string, string>; writable: Record<string, string> } {
  return {
    mounts: {
      [join(files, 'start')]: '/etc/ctg/redis-start',
      [join(files, 'auth')]: '/etc/ctg/redis-auth',
      [join(files, 'tls')]: '/etc/ctg/redis-tls',
    },
    writable: { [join(files, `data-${ordinal}`)]: '/data' },
  };
}

/** Starts pod N as the StatefulSet does: init container, then redis and sentinel in one network namespace. */
async function startPod(ordinal: number): Promise<void> {
  const name = `${set.metadata.name}-${ordinal}`;
  const init = pod.initContainers[0];
  const env: Record<string, string> = { POD_NAME: name };
  for (const e of init.env) if (e.value !== undefined) env[e.name] = e.value;
  net.run({ name: `${name}-init`, image: REDIS_IMAGE, user: redisUser, env, once: true, entrypoint: init.command, ...mounts(ordinal) });
  net.run({
    name,
    image: REDIS_IMAGE,
    user: redisUser,
    aliases: [`${name}.${set.spec.serviceName}`],
    entrypoint: container('redis').command,
    ...mounts(ordinal),
  });
  net.run({
    name: `${name}-sentinel`,
    image: REDIS_IMAGE,
    user: redisUser,
    podOf: name,
    entrypoint: container('sentinel').command,
    ...mounts(ordinal),
  });
  // The manifest's own readiness probes, run in the containers.
  for (const [c, probe] of [
    [name, container('redis').readinessProbe],
    [`${name}-sentinel`, container('sentinel').readinessProbe],
  ] as const) {
    await waitFor(
      `${c} to pass its readiness probe`,
      async () => {
        try {
          podman(['exec', `${net.name}-${c}`, ...probe.exec.command]);
          return true;
        } catch {
          return false;
        }
      },
      30_000,
    );
  }
}

/** How many times a Sentinel of the test's network entered TILT since `since` (its own log says so). */
function tiltsSince(name: string, since: number): number {
  const run = spawnSync('podman', ['logs', '--since', new Date(since).toISOString(), `${net.name}-${name}`], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  return `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.includes('+tilt #tilt mode entered')).length;
}

/** redis-cli over TLS inside `container` (of this network), with `password` from the environment, never argv. */
function tlsCli(container: string, password: string, ...args: string[]): string {
  return podman([
    'exec',
    '-e',
    `REDISCLI_AUTH=${password}`,
    `${net.name}-${container}`,
    'redis-cli',
    '--tls',
    '--cacert',
    '/etc/ctg/redis-tls/ca.crt',
    '-h',
    'localhost',
    ...args,
  ]).trim();
}

/** A Sentinel command over TLS with the Sentinel password, inside pod N. */
function sentinel(ordinal: number, ...args: string[]): string {
  return tlsCli(`ctg-redis-${ordinal}-sentinel`, sentinelPassword, '-p', '26379', ...args);
}

/**
 * The admin CLI as an administrator runs it in the cluster: the admin image, with the Redis URL
 * and key-hash secret authz has (the same Secrets) and the audit trail's secret. It appends every
 * change to the audit trail, checkpointed to a file outside Redis (docs/console.md): the test
 * hands it a host folder that outlives each run, as a volume would.
 */
let adminSpec: Omit<ContainerSpec, 'name' | 'args' | 'entrypoint'>;

function admin(args: readonly string[]): string {
  return runAdminCli(net, adminSpec, args);
}

/** Waits until the admin CLI in the authz container creates an organization (a write on the primary). */
async function writesThrough(what: string, timeoutMs: number): Promise<void> {
  let last = '';
  try {
    await waitFor(
      what,
      async () => {
        try {
          admin(['org', 'create', `org-${randomBytes(3).toString('hex')}`, '--models', 'm']);
          return true;
        } catch (error) {
          last = (error as Error).message;
          return false;
        }
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\nlast admin error: ${last}\n${net.logs()}`);
  }
}

beforeAll(async () => {
  for (const image of [REDIS_IMAGE, AUTHZ_IMAGE, ADMIN_IMAGE])
    expect(() => podman(['image', 'exists', image]), `${image}: run scripts/images/build.sh first`).not.toThrow();
  dirs = makeStackDir();
  files = mkdtempSync(join(tmpdir(), 'ctg-redis-set-'));
  // The pod's user, as the StatefulSet runs it (not the image's own: the official image's is 999).
  const uid = pod.securityContext.runAsUser as number;
  const gid = pod.securityContext.runAsGroup as number;
  expect(uid).toBeGreaterThanOrEqual(10_000);
  redisUser = `${uid}:${gid}`;
  // One certificate for every pod's name (and localhost, for the probes), from a private CA. Each
  // name explicitly: Node does not match a two-label wildcard (*.ctg-redis-headless).
  const tls = join(files, 'pki');
  mkdirSync(tls);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: tls, stdio: 'pipe' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=ctg-redis-test-ca',
  );
  ssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'tls.key',
    '-out',
    'tls.csr',
    '-subj',
    '/CN=ctg-redis',
  );
  const names = [0, 1, 2].map((i) => `DNS:${set.metadata.name}-${i}.${set.spec.serviceName}`);
  writeFileSync(join(tls, 'ext'), `subjectAltName=${[...names, 'DNS:localhost'].join(',')}\n`);
  ssl(
    'x509',
    '-req',
    '-in',
    'tls.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'tls.crt',
    '-days',
    '1',
    '-extfile',
    'ext',
  );
  const ca = readFileSync(join(tls, 'ca.crt'), 'utf8');
  secretDir(
    join(files, 'tls'),
    { 'tls.crt': readFileSync(join(tls, 'tls.crt'), 'utf8'), 'tls.key': readFileSync(join(tls, 'tls.key'), 'utf8'), 'ca.crt': ca },
    uid,
    gid,
  );
  secretDir(join(files, 'auth'), { password, 'sentinel-password': sentinelPassword }, uid, gid);
  const scripts = find(objects, 'ConfigMap', 'ctg-redis-start').data!;
  secretDir(join(files, 'start'), { 'start.sh': scripts['start.sh']!, 'sentinel.sh': scripts['sentinel.sh']! }, uid, gid);
  for (const i of [0, 1, 2]) {
    mkdirSync(join(files, `data-${i}`));
    chownSync(join(files, `data-${i}`), uid, gid);
  }
  net = new PodNetwork();
  try {
    for (const i of [0, 1, 2]) await startPod(i); // OrderedReady
    // authz with the overlay's environment and Secret ctg-redis as files (url, sentinel-password, ca.crt).
    const authzPod = find(objects, 'Deployment', 'ctg-authz').spec.template.spec;
    const authzUid = authzPod.securityContext.runAsUser as number;
    const redisSecret = secretDir(
      join(files, 'ctg-redis'),
      {
        url: `rediss://:${password}@${set.spec.serviceName}:6379`,
        'sentinel-password': sentinelPassword,
        'ca.crt': ca,
      },
      authzUid,
      authzUid,
    );
    const khs = secretDir(join(files, 'khs'), { 'key-hash-secret': readFileSync(dirs.secretFile, 'utf8') }, authzUid, authzUid);
    // Its other Secrets (grant key, caller token, metrics token): any values, at the paths its settings name.
    const authzEnv = { ...find(objects, 'ConfigMap', 'ctg-authz-env').data } as Record<string, string>;
    const tokenMounts: Record<string, string> = {};
    for (const name of ['GRANT_SECRET_FILE', 'AUTHZ_CALLER_TOKEN_FILE', 'METRICS_TOKEN_FILE']) {
      const path = authzEnv[name]!;
      const dir = path.slice(0, path.lastIndexOf('/'));
      tokenMounts[secretDir(join(files, name), { [path.slice(dir.length + 1)]: randomBytes(24).toString('hex') }, authzUid, authzUid)] =
        dir;
    }
    // The embedder's Redis password (Secret ctg-redis-embedder, as base/authz.yaml mounts it): authz
    // creates the embedder's ACL user with it on the primary, and again on a promoted replica.
    {
      const path = authzEnv.EMBEDDER_REDIS_PASSWORD_FILE!;
      const dir = path.slice(0, path.lastIndexOf('/'));
      tokenMounts[secretDir(join(files, 'embedder-redis'), { [path.slice(dir.length + 1)]: embedderPassword }, authzUid, authzUid)] = dir;
    }
    net.run({
      name: 'authz',
      image: AUTHZ_IMAGE,
      user: `${authzUid}:${authzUid}`,
      env: authzEnv,
      mounts: { [redisSecret]: '/etc/ctg/redis', [khs]: '/etc/ctg/key-hash-secret', ...tokenMounts },
    });
    // The admin CLI: the same Redis Secret and key-hash secret, as files of its own user.
    const adminRedis = secretDir(
      join(files, 'admin-redis'),
      { url: `rediss://:${password}@${set.spec.serviceName}:6379`, 'sentinel-password': sentinelPassword, 'ca.crt': ca },
      ADMIN_UID,
      ADMIN_UID,
    );
    const adminKhs = secretDir(
      join(files, 'admin-khs'),
      { 'key-hash-secret': readFileSync(dirs.secretFile, 'utf8') },
      ADMIN_UID,
      ADMIN_UID,
    );
    const auditDir = join(files, 'admin-audit');
    mkdirSync(auditDir);
    chownSync(auditDir, ADMIN_UID, ADMIN_UID);
    adminSpec = {
      image: ADMIN_IMAGE,
      user: `${ADMIN_UID}:${ADMIN_UID}`,
      env: { ...authzEnv, AUDIT_SECRET: randomBytes(24).toString('hex'), AUDIT_ANCHOR_FILE: '/audit/anchor.jsonl' },
      mounts: { [adminRedis]: '/etc/ctg/redis', [adminKhs]: '/etc/ctg/key-hash-secret' },
      writable: { [auditDir]: '/audit' },
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${net.logs()}`);
  }
}, 240_000);

afterAll(() => {
  net?.remove();
  if (files) rmSync(files, { recursive: true, force: true });
  if (dirs) removeStackDir(dirs);
});

/** redis-cli in pod `ordinal`'s Redis container, as the embedder's user or as the full (default) user. */
const cli = (ordinal: number, auth: string[], ...args: string[]) => tlsCli(`ctg-redis-${ordinal}`, auth[0]!, ...auth.slice(1), ...args);
const asEmbedder = (ordinal: number, ...args: string[]) => cli(ordinal, [embedderPassword, '--user', embedderUser], ...args);
const asFull = (ordinal: number, ...args: string[]) => cli(ordinal, [password], ...args);
const primaryOf = (ordinal: number) => sentinel(ordinal, 'SENTINEL', 'get-master-addr-by-name', 'ctg').split('\n')[0];

describe('components/redis-sentinel, run as the StatefulSet runs it', () => {
  it('pod 0 starts as the primary, the others as its replicas; the Sentinels agree and have a quorum', async () => {
    expect(primaryOf(2)).toBe(`ctg-redis-0.${set.spec.serviceName}`);
    // SENTINEL MASTER answers field, value, field, value, … one per line.
    const master = () => {
      const lines = sentinel(0, 'SENTINEL', 'master', 'ctg').split('\n');
      return Object.fromEntries(lines.flatMap((l, i) => (i % 2 === 0 ? [[l, lines[i + 1]]] : [])));
    };
    let state = {};
    try {
      await waitFor(
        'both replicas and the other Sentinels to be known',
        async () => {
          state = master();
          return (state as any)['num-slaves'] === '2' && (state as any)['num-other-sentinels'] === '2';
        },
        60_000,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${JSON.stringify(state)}`);
    }
    expect(sentinel(0, 'SENTINEL', 'ckquorum', 'ctg')).toMatch(/^OK 3 usable/);
    // sentinel.sh shortened every Sentinel's TILT period to 5 s (SENTINEL DEBUG answers name, value lines).
    for (const i of [0, 1, 2]) {
      const debug = sentinel(i, 'SENTINEL', 'DEBUG').split('\n');
      expect(debug[debug.indexOf('TILT-PERIOD') + 1], `pod ${i}'s Sentinel`).toBe('5000');
    }
  });

  it('authz reaches the primary through the Sentinels, over TLS with both passwords', async () => {
    await writesThrough('authz to write through the primary', 60_000);
  });

  it("the primary has the embedder's ACL user (authz makes it), allowed the settlement functions and nothing else; the replicas hold the functions", async () => {
    // ACLs are per node and not replicated: authz writes the user on the primary it reaches
    // (on every connect, and checks it every 30 s); the functions replicate.
    await waitFor("authz to create the embedder's user on the primary", async () => asEmbedder(0, 'PING') === 'PONG', 60_000);
    // It may not even list them (FUNCTION LIST would show the namespace): a full user looks.
    expect(asEmbedder(0, 'FUNCTION', 'LIST', 'LIBRARYNAME', 'ctg_settlement_*')).toMatch(/NOPERM/);
    expect(asFull(0, 'FUNCTION', 'LIST', 'LIBRARYNAME', 'ctg_settlement_*')).toContain('ctg_admit');
    expect(asEmbedder(0, 'GET', 'ctg:usage')).toMatch(/NOPERM/);
    expect(asEmbedder(0, 'FUNCTION', 'FLUSH')).toMatch(/NOPERM/);
    expect(asEmbedder(0, 'CONFIG', 'SET', 'min-replicas-to-write', '0')).toMatch(/NOPERM/);
    for (const i of [1, 2]) {
      await waitFor(
        `pod ${i} to hold the settlement functions`,
        async () => asFull(i, 'FUNCTION', 'LIST', 'LIBRARYNAME', 'ctg_settlement_*').includes('ctg_admit'),
        20_000,
      );
    }
  });

  // A Sentinel in TILT waits 5 s each time (see the bound below): room for several on a loaded machine.
  it("the primary's pod is lost: a replica is promoted, authz follows, the pod comes back as a replica", { timeout: 300_000 }, async () => {
    // The primary's node is lost: both of the pod's containers frozen, as a hung or cut-off node
    // leaves them (its pod object, so its name in the headless Service, stays until evicted;
    // nothing answers). Removing the containers instead also drops the name from podman's DNS,
    // whose lookups of it then sometimes hung 5-10 s, again and again: Sentinel resolves the lost
    // primary's name every second, blocking, and each hang put it into TILT (a cluster's DNS
    // answers at once). The pod is removed for good once a replica is promoted, below.
    for (const c of ['ctg-redis-0-sentinel', 'ctg-redis-0']) podman(['pause', `${net.name}-${c}`]);
    const lostAt = Date.now();
    // And the surviving Sentinels stall for 3 s just after (frozen, as a starved node or a hung
    // DNS lookup stalls them): both enter TILT. With Sentinel's 30 s TILT they would mark the
    // primary down only after its replicas had been cut off for more than 10 x down-after (20 s)
    // and never promote either; sentinel.sh's 5 s period leaves time.
    for (const i of [1, 2]) podman(['pause', `${net.name}-ctg-redis-${i}-sentinel`]);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    for (const i of [1, 2]) podman(['unpause', `${net.name}-ctg-redis-${i}-sentinel`]);
    try {
      // Long enough for the bound below to decide, TILT included.
      await waitFor('a replica to be promoted', async () => primaryOf(1) !== `ctg-redis-0.${set.spec.serviceName}`, 150_000);
    } catch (error) {
      // What the Sentinels know of the replicas says why none was good enough to promote.
      const replicas = [1, 2].map((i) => {
        try {
          return sentinel(i, 'SENTINEL', 'replicas', 'ctg');
        } catch (e) {
          return (e as Error).message;
        }
      });
      throw new Error(`${(error as Error).message}\n${replicas.join('\n')}\n${net.logs()}`);
    }
    // Whatever fails from here on, the pods' logs say what the Sentinels did.
    try {
      const promotedAfterMs = Date.now() - lostAt;
      // The primary the surviving Sentinels settle on: both name it, neither is failing over, and
      // it says it is one, twice 2 s apart. (After a stall, a Sentinel that did not hear of the
      // first promotion in time may run its own at a higher epoch; the higher epoch wins.)
      let primary = '';
      let seen = '';
      await waitFor(
        'the Sentinels to settle on one primary',
        async () => {
          const names = [1, 2].map((i) => primaryOf(i)!);
          const busy = [1, 2].some((i) => /failover_in_progress/.test(sentinel(i, 'SENTINEL', 'master', 'ctg')));
          const ordinal = Number(/^ctg-redis-(\d+)\./.exec(names[0]!)?.[1]);
          const settled =
            names[0] === names[1] && !busy && ordinal > 0 && /role:master/.test(asFull(ordinal, 'INFO', 'replication')) ? names[0]! : '';
          const stable = settled !== '' && settled === seen;
          seen = settled;
          if (stable) primary = settled;
          else await new Promise((resolve) => setTimeout(resolve, 2_000));
          return stable;
        },
        60_000,
      );
      await writesThrough('authz to write through the new primary', 30_000);
      // The promoted replica had no embedder user (ACLs are not replicated): authz makes it there.
      const promoted = Number(/^ctg-redis-(\d+)\./.exec(primary)?.[1]);
      await waitFor("the embedder's user on the promoted primary", async () => asEmbedder(promoted, 'PING') === 'PONG', 45_000);
      expect(asEmbedder(promoted, 'GET', 'ctg:usage')).toMatch(/NOPERM/);
      net.kill('ctg-redis-0-sentinel');
      net.kill('ctg-redis-0');
      await startPod(0);
      // Back as a replica of the primary the Sentinels name: at once when its start.sh finds it, or
      // once a Sentinel converts it (it may come up alone first while its own Sentinel restarts).
      // Removing the lost pod's containers can stall the Sentinels again (podman's DNS, above), and
      // a later failover at a higher epoch may move the primary once more: whichever they name now.
      let info = '';
      let named = '';
      await waitFor(
        'the old primary to come back as a replica of the primary the Sentinels name',
        async () => {
          info = asFull(0, 'INFO', 'replication');
          named = primaryOf(1)!;
          return /role:slave/.test(info) && named !== `ctg-redis-0.${set.spec.serviceName}` && info.includes(`master_host:${named}`);
        },
        90_000,
      ).catch(() => undefined);
      expect(info).toMatch(/role:slave/);
      expect(info).toContain(`master_host:${named}`);
      // down-after-milliseconds 2 s plus the election; the two Sentinels left may split their votes
      // once, and retry after 2 x failover-timeout (10 s). A Sentinel whose timer stalled past 2 s
      // (this machine starved of CPU by other work, or a lookup of the lost pod's name that hangs
      // while podman's DNS drops it: up to 10 s seen) enters TILT and acts on nothing for 5 s
      // (sentinel.sh): 15 s more for each TILT a surviving Sentinel's own log shows from 15 s before
      // the loss on (the stall and the period). Without TILT, 20 s.
      const tilts = Math.max(...[1, 2].map((i) => tiltsSince(`ctg-redis-${i}-sentinel`, lostAt - 15_000)));
      expect(tilts, 'the stall put a Sentinel into TILT').toBeGreaterThanOrEqual(1);
      expect(promotedAfterMs, `${tilts} TILT period(s) in the Sentinels' logs`).toBeLessThan(20_000 + tilts * 15_000);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${net.logs()}`);
    }
  });
});
