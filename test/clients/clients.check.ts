/**
 * Every client the README and docs/clients.md show, run as written against a real stack (Envoy,
 * authz, the embedder with the default model, Redis): each snippet is taken from its page by its
 * marker, pointed at this stack, run in the client's own runtime, and then probed through the
 * objects it defined (test/clients/python, test/clients/node). Its vectors must equal the
 * README curl's, its query vectors the gateway's `input_type: query` ones, and each error must
 * raise the class docs/clients.md's table names. Run by `make test-clients`.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createOrg, orgName, orgWithKey } from '../support/stack-admin.js';
import { repoRoot, startStack, type Stack } from '../support/stack.js';
import { readErrorTable, TABLE_STATUSES } from './error-table.js';
import { pointAt, readDocSnippets, type Snippet } from './readme-snippets.js';
import { runBatchSnippet } from '../support/readme-batch.js';

const run = promisify(execFile);
const snippets = readDocSnippets(repoRoot);
const errorTable = readErrorTable(readFileSync(join(repoRoot, 'docs/clients.md'), 'utf8'), '## Errors in each client');
const TEXT = 'Patient denies chest pain.';
const TOLERANCE = 1e-5;

type Runtime = 'python' | 'litellm' | 'node';
const CLIENTS: Record<string, { runtime: Runtime; exports?: string }> = {
  'openai-node': { runtime: 'node', exports: 'client' },
  'openai-python': { runtime: 'python' },
  'langchain-python': { runtime: 'python' },
  'langchain-node': { runtime: 'node', exports: 'documents, queries' },
  llamaindex: { runtime: 'python' },
  'llamaindex-openai-like': { runtime: 'python' },
  haystack: { runtime: 'python' },
  litellm: { runtime: 'litellm' },
  'vercel-ai': { runtime: 'node', exports: 'documents, queries, embed, embedMany' },
  chromadb: { runtime: 'python' },
  lancedb: { runtime: 'python' },
};
const PYTHON: Record<Exclude<Runtime, 'node'>, string> = {
  python: join(repoRoot, '.local/clients-venv/bin/python'),
  litellm: join(repoRoot, '.venv-litellm/bin/python'),
};
const npmDir = join(repoRoot, '.local/clients-npm');

let stack: Stack;
let work: string;
let keyWithoutModel: string;
let curlDocument: number[];
let gatewayQuery: number[];

beforeAll(async () => {
  for (const path of [...Object.values(PYTHON), join(npmDir, 'node_modules')]) {
    expect(existsSync(path), `${path} missing: run bash scripts/stack/install-clients.sh`).toBe(true);
  }
  stack = await startStack();
  work = mkdtempSync(join(tmpdir(), 'ctg-clients-'));
  const org = orgName('clients-nomodel');
  createOrg(stack, org, { models: [] });
  keyWithoutModel = createKey(stack, org).key;
  curlDocument = await curlVector();
  const res = await stack.request({
    method: 'POST',
    path: '/v1/embeddings',
    headers: { authorization: `Bearer ${orgWithKey(stack, 'clients-ref').key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: stack.svc.modelId, input: [TEXT], input_type: 'query' }),
  });
  gatewayQuery = JSON.parse(res.body).data[0].embedding;
});

afterAll(async () => {
  await stack?.stop();
});

function snippet(name: string): Snippet {
  const found = snippets.get(name);
  if (!found) throw new Error(`no page (README.md, docs/*.md) has a <!-- snippet: ${name} --> block`);
  return found;
}

/** The README's curl line, run by bash as written: its vector is the reference. */
async function curlVector(): Promise<number[]> {
  const { code, env } = pointAt(snippet('curl'), stack.baseUrl, stack.dirs.caFile);
  const { stdout } = await run('bash', ['-c', code.replace(/^curl /, 'curl -sS ')], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...env, KEY: orgWithKey(stack, 'clients-curl').key },
  });
  const body = JSON.parse(stdout);
  expect(body.data[0].embedding).toHaveLength(1024);
  return body.data[0].embedding;
}

/** The clients whose models.list() / models.retrieve() are probed (the OpenAI SDKs'). */
const MODEL_LISTING = ['openai-python', 'openai-node'];

/**
 * The SDK's models.list() and models.retrieve() against the stack: the served model in OpenAI's
 * shape for a key whose organization may use it, none for one whose organization may not, and
 * 403 (PermissionDeniedError) for a model the organization may not use or that does not exist.
 */
function expectModels(models: any): void {
  const served = { id: stack.svc.modelId, object: 'model', created: expect.any(Number), owned_by: 'clinical-embedding-gateway' };
  const denied = { class: 'PermissionDeniedError', status: 403 };
  expect(models).toEqual({
    key: { list: [served], retrieve: served, unknown: denied },
    noModel: { list: [], retrieve: denied, unknown: denied },
  });
}

/** What the README says each print line shows (its trailing `# …` or `// …` comment). */
function documentedOutput(code: string): string[] {
  return [...code.matchAll(/^\s*(?:print|console\.log)\(.*\)\s*;?\s*(?:#|\/\/)\s*(\S[^(\n]*?)\s*(?:\(.*)?$/gm)].map((m) => m[1]!);
}

function maxDifference(a: readonly number[], b: readonly number[]): number {
  expect(a).toHaveLength(b.length);
  return Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
}

async function runClient(name: string): Promise<any> {
  const { runtime, exports } = CLIENTS[name]!;
  const { code, env } = pointAt(snippet(name), stack.baseUrl, stack.dirs.caFile);
  const keys = {
    KEY: orgWithKey(stack, `clients-${name}`).key,
    KEY_BAD: `CTG_NOTAREALKEYX_${'Q'.repeat(38)}`,
    KEY_NOMODEL: keyWithoutModel,
    KEY_LIMITED: orgWithKey(stack, `clients-${name}-limited`, { rpm: 3 }).key,
  };
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, ...keys };
  const options = { cwd: work, maxBuffer: 16 * 1024 * 1024, timeout: 170_000 };
  if (runtime === 'node') {
    const dir = join(npmDir, 'run');
    mkdirSync(dir, { recursive: true });
    for (const file of ['driver.mjs', 'adapters.mjs']) copyFileSync(join(repoRoot, 'test/clients/node', file), join(dir, file));
    const file = join(dir, `${name}.mjs`);
    writeFileSync(file, `${code}\nexport { ${exports} };\n`);
    return JSON.parse((await run(process.execPath, [join(dir, 'driver.mjs'), name, file], { ...options, env: base })).stdout);
  }
  const file = join(work, `${name}.py`);
  writeFileSync(file, code);
  const pythonEnv = {
    ...base,
    PYTHONPATH: join(repoRoot, 'test/clients/python'),
    LITELLM_LOCAL_MODEL_COST_MAP: env.LITELLM_LOCAL_MODEL_COST_MAP ?? '',
  };
  const { stdout } = await run(PYTHON[runtime], [join(repoRoot, 'test/clients/python/driver.py'), name, file], {
    ...options,
    env: pythonEnv,
  });
  return JSON.parse(stdout);
}

describe('README and docs/clients.md clients, run as written', () => {
  it('the pages name every client this check runs, and the error table has a row for each', () => {
    expect([...snippets.keys()].sort()).toEqual(['batch-node', 'batch-python', 'curl', ...Object.keys(CLIENTS)].sort());
    expect([...errorTable.keys()].sort()).toEqual(Object.keys(CLIENTS).sort());
  });

  for (const name of Object.keys(CLIENTS)) {
    it(name, async () => {
      const started = Date.now();
      const report = await runClient(name);
      const documented = documentedOutput(snippet(name).code);
      expect(documented.length, 'the snippet shows what it prints').toBeGreaterThan(0);
      expect(report.printed).toEqual(documented);
      expect(maxDifference(report.document, curlDocument), 'document vector vs curl').toBeLessThan(TOLERANCE);
      expect(maxDifference(report.query, gatewayQuery), 'query vector vs input_type query').toBeLessThan(TOLERANCE);
      if (report.async) expect(maxDifference(report.async, curlDocument), 'async document vector').toBeLessThan(TOLERANCE);
      if (report.asyncQuery) expect(maxDifference(report.asyncQuery, gatewayQuery), 'async query vector').toBeLessThan(TOLERANCE);
      if ('embedMany1001' in report) expect(report.embedMany1001).toBe(1001);
      if (MODEL_LISTING.includes(name)) expectModels(report.models);
      const expected = errorTable.get(name)!;
      for (const status of TABLE_STATUSES) {
        const seen = report.errors[status];
        expect(
          { class: seen.class, ...(expected[status].wraps ? { wraps: seen.wraps } : {}) },
          `HTTP ${status} (all: ${JSON.stringify(report.errors)})`,
        ).toEqual(expected[status]);
      }
      console.info(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    });
  }
});

// docs/batch.md, "Re-indexing a corpus": the Batch API with the clients' own OpenAI SDKs (make test uses the repo's, test/e2e/batch.test.ts).
describe('docs/batch.md batch snippets, run as written', () => {
  for (const name of ['batch-python', 'batch-node'] as const) {
    it(name, async () => {
      const result = await runBatchSnippet(
        repoRoot,
        name,
        { baseUrl: stack.baseUrl, caFile: stack.dirs.caFile },
        orgWithKey(stack, `clients-${name}`).key,
        {
          python: PYTHON.python,
          nodeModulesDir: npmDir,
        },
      );
      expect(result.documented.length, 'the snippet shows what it prints').toBeGreaterThan(0);
      expect(result.printed).toEqual(result.documented);
    });
  }
});
