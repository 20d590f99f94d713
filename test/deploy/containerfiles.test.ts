/**
 * The Containerfiles under deploy/: hadolint-clean, on pinned official bases, non-root, and
 * starting each service exactly as the local stack does (scripts/stack/components.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENTRYPOINTS } from '../../scripts/stack/components.js';
import { repoRoot } from '../support/stack.js';
import { find, parseObjects, renderOverlay, tool, workload } from './kustomize.js';

const COMPONENTS = ['authz', 'embedder', 'gateway', 'admin'] as const;
const containerfile = (c: string) => join(repoRoot, 'deploy', c, 'Containerfile');
const read = (c: string) => readFileSync(containerfile(c), 'utf8');

/** The JSON-array argument of every `INSTRUCTION [...]` line. */
function execForms(text: string, instruction: 'ENTRYPOINT' | 'CMD'): string[][] {
  return [...text.matchAll(new RegExp(`^${instruction}\\s+(\\[.*\\])\\s*$`, 'gm'))].map((m) => JSON.parse(m[1]!) as string[]);
}

describe('Containerfiles', () => {
  it.each(COMPONENTS)('%s passes hadolint', (c) => {
    // hadolint exits non-zero on any finding (error, warning, info or style) and prints it.
    const run = () => execFileSync(tool('hadolint'), [containerfile(c)], { encoding: 'utf8', stdio: 'pipe' });
    expect(run).not.toThrow();
  });

  it.each(['node', 'envoy', 'redis'])("the image test's %s stand-in base passes hadolint", (base) => {
    const run = () =>
      execFileSync(tool('hadolint'), [join(repoRoot, 'scripts/images/bases', `${base}.Containerfile`)], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    expect(run).not.toThrow();
  });

  it('hadolint does fail a Containerfile with a finding (the check is live)', () => {
    const bad = join(repoRoot, 'deploy/authz/Containerfile');
    const text = `${readFileSync(bad, 'utf8')}\nFROM node:latest\nRUN cd /tmp && true\n`;
    const run = spawnSync(tool('hadolint'), ['-'], { input: text, encoding: 'utf8' });
    expect(run.status).not.toBe(0);
    expect(run.stdout).toMatch(/DL3007/); // "Using latest is prone to errors"
  });

  it.each(COMPONENTS)('%s builds FROM an official base pinned by version tag, digest-capable (ARG … = name:tag[@sha256:…])', (c) => {
    const text = read(c);
    const stages = [...text.matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((m) => m[1]!);
    const bases = [...text.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!).filter((b) => !stages.includes(b));
    expect(bases.length).toBeGreaterThan(0);
    const firstFrom = text.search(/^FROM /m);
    for (const base of bases) {
      // Each base is a build argument declared before the first FROM, so a build pins it by digest.
      const arg = /^\$\{(\w+)\}$/.exec(base)?.[1];
      expect(arg, `${c}: FROM ${base}`).toBeDefined();
      const declared = new RegExp(`^ARG ${arg}=(\\S+)$`, 'm').exec(text);
      expect(declared?.index, `${c}: ARG ${arg}`).toBeLessThan(firstFrom);
      expect(declared![1]).toMatch(
        c === 'gateway'
          ? /^docker\.io\/envoyproxy\/envoy:v1\.40\.\d+(@sha256:[0-9a-f]{64})?$/
          : /^docker\.io\/library\/node:20\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/,
      );
    }
  });

  it('every Node image builds FROM the same base (one pin to change), which the image test builds by digest', () => {
    const pins = ['authz', 'embedder', 'admin'].map((c) => /^ARG NODE_IMAGE=(\S+)$/m.exec(read(c))?.[1]);
    expect(new Set(pins).size).toBe(1);
    const build = readFileSync(join(repoRoot, 'scripts/images/build.sh'), 'utf8');
    expect(build).toMatch(/--build-arg "NODE_IMAGE=\$NODE_IMAGE" --build-arg "ENVOY_IMAGE=\$ENVOY_IMAGE"/);
    expect(build).toMatch(/NODE_IMAGE="\$\(pinned /);
  });

  it.each(COMPONENTS)("%s runs as a numeric non-root user of 10000 or above, the pod's", (c) => {
    const users = [...read(c).matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]!);
    const last = users.at(-1)!;
    expect(last).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    const [uid, gid] = last.split(':').map(Number) as [number, number];
    expect(uid).toBeGreaterThanOrEqual(10_000);
    const pod = workload(parseObjects(renderOverlay('production')), `ctg-${c}`).spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsUser: uid, runAsGroup: gid, fsGroup: gid });
  });

  it.each(['authz', 'embedder'] as const)("%s starts the stack's own entrypoint, compiled: node, no transpiler", (c) => {
    const source = ENTRYPOINTS[c].at(-1)!;
    expect(execForms(read(c), 'ENTRYPOINT')).toEqual([['node', source.replace(/\.ts$/, '.js')]]);
    // build-service.mjs compiles exactly the entries of the image's build.json.
    const build = JSON.parse(readFileSync(join(repoRoot, 'deploy', c, 'build.json'), 'utf8')) as { entries: string[] };
    expect(build.entries).toContain(source);
    expect(read(c)).toMatch(new RegExp(`^RUN node scripts/images/build-service\\.mjs deploy/${c}/build\\.json /out$`, 'm'));
    // Nothing in the Deployment overrides it.
    const deployment = find(parseObjects(renderOverlay('production')), 'Deployment', `ctg-${c}`);
    const container = deployment.spec.template.spec.containers[0];
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
  });

  it("admin starts `make console`'s server, compiled, and carries `npm run admin`'s CLI, which deploy/README.md runs with kubectl exec", () => {
    const server = /exec node --import tsx (admin\/src\/main\.ts)$/m.exec(readFileSync(join(repoRoot, 'Makefile'), 'utf8'))?.[1];
    const cli = /^tsx (admin\/src\/cli\/main\.ts)$/.exec(
      JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).scripts.admin,
    )?.[1];
    expect([server, cli]).toEqual(['admin/src/main.ts', 'admin/src/cli/main.ts']);
    expect(execForms(read('admin'), 'ENTRYPOINT')).toEqual([['node', server!.replace(/\.ts$/, '.js')]]);
    const build = JSON.parse(readFileSync(join(repoRoot, 'deploy/admin/build.json'), 'utf8')) as { entries: string[] };
    expect(build.entries).toEqual(expect.arrayContaining([server, cli]));
    expect(read('admin')).toMatch(/^RUN node scripts\/images\/build-service\.mjs deploy\/admin\/build\.json \/out$/m);
    const container = workload(parseObjects(renderOverlay('production')), 'ctg-admin').spec.template.spec.containers[0];
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
    // Every CLI command deploy/README.md runs in the pod names the compiled CLI.
    const readme = readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8');
    const execs = [...readme.matchAll(/kubectl -n \$NS exec (?:-i )?ctg-admin-0 -- (?:env \S+ )?(node \S+)/g)].map((m) => m[1]);
    expect(execs.length).toBeGreaterThanOrEqual(2);
    for (const command of execs) expect(command).toBe(`node ${cli!.replace(/\.ts$/, '.js')}`);
  });

  it('the gateway runs Envoy on the config the render init container writes, as the local stack does', () => {
    const [entrypoint] = execForms(read('gateway'), 'ENTRYPOINT');
    const [cmd] = execForms(read('gateway'), 'CMD');
    expect(entrypoint).toEqual(['/usr/local/bin/envoy']);
    const pod = find(parseObjects(renderOverlay('production')), 'Deployment', 'ctg-gateway').spec.template.spec;
    const envoy = pod.containers.find((x: any) => x.name === 'envoy');
    const render = pod.initContainers.find((x: any) => x.name === 'render-config');
    // The image's CMD is the prefix of the pod's args, which only add worker and drain flags.
    expect(envoy.args.slice(0, cmd!.length)).toEqual(cmd);
    expect(cmd).toEqual(expect.arrayContaining(['--disable-hot-restart']));
    const configPath = cmd![cmd!.indexOf('-c') + 1];
    // The init container runs envoy/render.ts compiled (an entry of the authz image), whose
    // renderer the stack module uses too, into that path.
    expect(render.command).toEqual(['node', 'envoy/render.js', configPath]);
    expect(JSON.parse(readFileSync(join(repoRoot, 'deploy/authz/build.json'), 'utf8')).entries).toContain('envoy/render.ts');
    expect(render.image).toBe(
      find(parseObjects(renderOverlay('production')), 'Deployment', 'ctg-authz').spec.template.spec.containers[0].image,
    );
    const stack = readFileSync(join(repoRoot, 'scripts/stack/local-stack.ts'), 'utf8');
    expect(stack).toMatch(/from '\.\.\/\.\.\/envoy\/render\.js'/);
    expect(stack).toMatch(/writeEnvoyConfig\(/); // envoy/render.ts: the bootstrap and the caller-token SDS file
    expect(readFileSync(join(repoRoot, 'scripts/stack/components.ts'), 'utf8')).toMatch(/'--disable-hot-restart'/);
  });

  it('the embedder image with the model bakes the three model files into MODEL_DIR', () => {
    const text = read('embedder');
    expect(text).toMatch(/^FROM embedder AS embedder-with-model$/m);
    const copy = text.match(/^COPY .*\/models\/default\/$/m)?.[0] ?? '';
    for (const f of ['model.onnx', 'tokenizer.json', 'manifest.json']) expect(copy).toContain(`.local/models/default/${f}`);
    expect(text).toMatch(/MODEL_DIR=\/models\/default/);
  });
});
