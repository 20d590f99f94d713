/**
 * The README's make targets, typed as a user types them, for those no other test runs:
 * `make help` (and that it lists every target the README's table promises), `make console`, and
 * `make prometheus` against a running stack. `make fleet` runs in test/fleet/fleet.test.ts
 * (`make fleet FLEET_ARGS="--quick …"`), the others in test/stack, test/e2e and the suites
 * themselves. Each target runs on free ports, in its own process group, stopped afterwards.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, waitFor } from '../support/process.js';
import { testPrefix } from '../support/redis-store.js';
import { redisUrl, repoRoot, startStack, type Stack } from '../support/stack.js';

interface MakeRun {
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM to the whole group (make, its shell, the server), then waits for make to exit. */
  stop(): Promise<void>;
}

/** `make <args>` in the repository, as its own process group, with `env` added to this one's. */
function make(args: readonly string[], env: Record<string, string> = {}): MakeRun {
  let output = '';
  const child = spawn('make', args, { cwd: repoRoot, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // The group is already gone.
        }
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      }
    },
  };
}

const running: MakeRun[] = [];
const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(running.map((run) => run.stop()));
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** The targets in the README's table of make targets. */
function readmeTargets(): string[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('| Target | Does |'));
  const rows = table.slice(0, table.indexOf('\n\n')).split('\n');
  return [...new Set(rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`make ([a-z0-9-]+)`/g)].map((m) => m[1]!)))];
}

/**
 * `make help` as a user types it. Under `make test` the parent's MAKEFLAGS and MAKELEVEL would make
 * this make print "Entering directory" lines a user never sees, so they are left out.
 */
function makeHelp() {
  const { MAKEFLAGS: _flags, MAKELEVEL: _level, MFLAGS: _mflags, ...env } = process.env;
  return spawnSync('make', ['help'], { cwd: repoRoot, encoding: 'utf8', env });
}

describe('the README make targets', () => {
  it('make help lists every target, and the README table names each of them', () => {
    const result = makeHelp();
    expect(result.status, result.stderr).toBe(0);
    const listed = [...result.stdout.matchAll(/^ {2}make ([a-z0-9-]+)\s/gm)].map((m) => m[1]!);
    const promised = readmeTargets();
    expect(promised.length).toBeGreaterThan(10);
    expect(listed.filter((t) => t !== 'help').sort()).toEqual([...promised].sort());
  });

  it('every .PHONY target has a rule, and every rule but images-check is in make help (a phony name with no rule runs nothing)', () => {
    const makefile = readFileSync(join(repoRoot, 'Makefile'), 'utf8');
    const phony = /^\.PHONY:(.*)$/m.exec(makefile)![1]!.trim().split(/\s+/);
    const rules = [...makefile.matchAll(/^([a-z0-9-]+):/gm)].map((m) => m[1]!);
    expect([...phony].sort()).toEqual([...rules].sort());
    const listed = [...makeHelp().stdout.matchAll(/^ {2}make ([a-z0-9-]+)\s/gm)].map((m) => m[1]!);
    expect(rules.filter((rule) => !listed.includes(rule))).toEqual(['images-check']);
  });

  it('make help aligns every description, however long the target name', () => {
    const lines = makeHelp().stdout.trimEnd().split('\n');
    const columns = lines.map((line) => /^ {2}make [a-z0-9-]+ +/.exec(line)?.[0].length);
    expect(columns.every((c) => c !== undefined)).toBe(true);
    // One column for all, past the longest name (test-clients, test-litellm), with two spaces before it.
    expect(new Set(columns).size, lines.join('\n')).toBe(1);
    const longest = Math.max(...lines.map((line) => /^ {2}make ([a-z0-9-]+)/.exec(line)![1]!.length));
    expect(columns[0]).toBe('  make '.length + longest + 2);
  });

  it("make help's install line names only what install installs (no certificates: each stack makes its own)", () => {
    const line = makeHelp()
      .stdout.split('\n')
      .find((l) => /^ {2}make install /.test(l))!;
    const script = readFileSync(join(repoRoot, 'scripts/stack/install.sh'), 'utf8');
    // Each thing the line claims, and the script step that does it.
    const claims: Array<[RegExp, string]> = [
      [/cert/i, 'certs.sh'],
      [/npm/, 'npm ci'],
      [/Envoy/, 'install-envoy.sh'],
      [/models/, 'install-model.sh'],
      [/Python/, 'install-python-sdk.sh'],
      [/deploy/, 'install-deploy-tools.sh'],
      [/Prometheus/, 'install-prometheus.sh'],
    ];
    for (const [claim, step] of claims) {
      if (claim.test(line)) expect(script, `the help says ${claim}`).toContain(step);
    }
  });

  it('make console serves the console and the admin API with the token it wrote', { timeout: 90_000 }, async () => {
    const port = await freePort();
    const run = make(['console'], {
      ADMIN_PORT: String(port),
      // Its own Redis key prefix and secret: the console must not touch a developer's stack.
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: testPrefix(),
      KEY_HASH_SECRET: randomBytes(24).toString('hex'),
      MODEL_ID: 'console-check',
    });
    running.push(run);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('make console to listen', async () => (await fetch(`${base}/`).catch(() => undefined))?.ok === true, 60_000);
    expect(await (await fetch(`${base}/`)).text()).toMatch(/<html/i);
    const token = readFileSync(join(repoRoot, '.local/admin-token'), 'utf8').trim();
    const orgs = await fetch(`${base}/api/orgs`, { headers: { authorization: `Bearer ${token}` } });
    expect(orgs.status, run.output()).toBe(200);
    const refused = await fetch(`${base}/api/orgs`, { headers: { authorization: `Bearer ${'x'.repeat(44)}` } });
    expect(refused.status).toBe(401);
    await run.stop();
    expect(run.child.exitCode ?? run.child.signalCode).not.toBeNull();
  });

  describe('make prometheus, after a stack is up', () => {
    let stack: Stack | undefined;
    afterAll(async () => {
      await stack?.stop();
    });

    it('scrapes the stack, every target up', { timeout: 240_000 }, async () => {
      stack = await startStack(join(repoRoot, '.local/models/test'));
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'make-prometheus-'));
      scratch.push(dir);
      // The stack's own variables, as `make up` on other ports would have them exported.
      const run = make(['prometheus'], {
        PROMETHEUS_PORT: String(port),
        PROMETHEUS_DIR: dir,
        ENVOY_ADMIN_PORT: String(stack.ports.admin),
        AUTHZ_METRICS_PORT: String(stack.ports.authzMetrics),
        EMBEDDER_PORT: String(stack.ports.embedder),
        METRICS_TOKEN_FILE: stack.dirs.metricsTokenFile,
      });
      running.push(run);
      const base = `http://127.0.0.1:${port}`;
      await waitFor(
        'make prometheus to be ready',
        async () => (await fetch(`${base}/-/ready`).catch(() => undefined))?.ok === true,
        60_000,
      );
      type Targets = { activeTargets: Array<{ labels: { job: string }; health: string }> };
      let targets: Targets['activeTargets'] = [];
      // The committed config scrapes every 15 s: the first scrape of each job comes within that.
      await waitFor(
        'every target scraped and up',
        async () => {
          const body = (await (await fetch(`${base}/api/v1/targets?state=active`)).json()) as { data: Targets };
          targets = body.data.activeTargets;
          return targets.length === 3 && targets.every((t) => t.health === 'up');
        },
        60_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(targets)}\n${run.output()}`);
      });
      expect(targets.map((t) => t.labels.job).sort()).toEqual(['authz', 'embedder', 'envoy']);
      await run.stop();
    });
  });
});
