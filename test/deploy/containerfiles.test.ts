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
import { find, parseObjects, renderOverlay, tool } from './kustomize.js';

const COMPONENTS = ['authz', 'embedder', 'gateway'] as const;
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

  it.each(COMPONENTS)('%s builds FROM official bases pinned by version tag', (c) => {
    const bases = [...read(c).matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);
    expect(bases.length).toBeGreaterThan(0);
    const stages = [...read(c).matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((m) => m[1]!);
    for (const base of bases.filter((b) => !stages.includes(b))) {
      expect(base).toMatch(c === 'gateway' ? /^envoyproxy\/envoy:v1\.40\.\d+$/ : /^node:20\.\d+\.\d+-bookworm-slim$/);
    }
  });

  it.each(COMPONENTS)('%s runs as a numeric non-root user', (c) => {
    const users = [...read(c).matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]!);
    const last = users.at(-1);
    expect(last).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
  });

  it.each(['authz', 'embedder'] as const)("%s starts with the stack's own entrypoint", (c) => {
    expect(execForms(read(c), 'ENTRYPOINT')).toEqual([[...ENTRYPOINTS[c]]]);
    // Nothing in the Deployment overrides it.
    const deployment = find(parseObjects(renderOverlay('production')), 'Deployment', `ctg-${c}`);
    const container = deployment.spec.template.spec.containers[0];
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
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
    // The init container runs envoy/render.ts, whose renderer the stack module uses too, into that path.
    expect(render.command).toEqual(['node', '--import', 'tsx', 'envoy/render.ts', configPath]);
    expect(render.image).toBe(
      find(parseObjects(renderOverlay('production')), 'Deployment', 'ctg-authz').spec.template.spec.containers[0].image,
    );
    const stack = readFileSync(join(repoRoot, 'scripts/stack/local-stack.ts'), 'utf8');
    expect(stack).toMatch(/from '\.\.\/\.\.\/envoy\/render\.js'/);
    expect(stack).toMatch(/renderEnvoyConfig\(/);
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
