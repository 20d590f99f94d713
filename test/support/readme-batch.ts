/**
 * Runs the Batch API snippets of docs/batch.md ("Re-indexing a corpus") as written (pointed at a test stack by
 * test/clients/readme-snippets.ts: only the base URL and the CA path change), in a fresh working
 * directory, with a given Python and a folder whose node_modules hold the `openai` package.
 * Returns what each printed, line by line, and what its comments say it prints.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pointAt, readDocSnippets } from '../clients/readme-snippets.js';

const run = promisify(execFile);

/** What a snippet printed, and what its trailing comments say it prints. */
export interface SnippetRun {
  readonly printed: string[];
  readonly documented: string[];
}

const documented = (code: string): string[] =>
  [...code.matchAll(/^\s*(?:print|console\.log)\(.*\)\s*;?\s*(?:#|\/\/)\s*(\S.*?)\s*$/gm)].map((m) => m[1]!);

/** Runs snippet `name` (batch-python or batch-node) against `stack` with `key`. */
export async function runBatchSnippet(
  repoRoot: string,
  name: 'batch-python' | 'batch-node',
  stack: { baseUrl: string; caFile: string },
  key: string,
  runtimes: { python: string; nodeModulesDir: string },
): Promise<SnippetRun> {
  const snippet = readDocSnippets(repoRoot).get(name);
  if (!snippet) throw new Error(`no page (README.md, docs/*.md) has a <!-- snippet: ${name} --> block`);
  const { code, env } = pointAt(snippet, stack.baseUrl, stack.caFile);
  const cwd = mkdtempSync(join(tmpdir(), 'ctg-reindex-'));
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, KEY: key };
  try {
    let stdout: string;
    if (name === 'batch-python') {
      writeFileSync(join(cwd, 'reindex.py'), code);
      ({ stdout } = await run(runtimes.python, ['reindex.py'], { cwd, env: base }));
    } else {
      // The script sits where `openai` resolves from; it writes notes.jsonl in its own cwd.
      const script = join(runtimes.nodeModulesDir, `.reindex-${process.pid}-${Date.now()}.mjs`);
      writeFileSync(script, code);
      try {
        ({ stdout } = await run(process.execPath, [script], { cwd, env: base }));
      } finally {
        rmSync(script, { force: true });
      }
    }
    return { printed: stdout.trim().split('\n'), documented: documented(snippet.code) };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}
