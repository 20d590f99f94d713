/**
 * The snippets of the user-facing pages (README.md and docs/*.md), taken as written: each fenced
 * block right after a `<!-- snippet: NAME -->` marker, found on whichever page it lives, so a
 * snippet moved between pages is still the one the tests run. A snippet's first comment line may say how to run it
 * (`// NODE_EXTRA_CA_CERTS=.local/tls/ca.pem node embed.mjs`); its leading VAR=value words are
 * the environment the page tells the user to set. Pointing a snippet at a test stack
 * replaces only the documented base URL and CA path, and fails when either is missing, so a
 * page edit that drifts from what the test runs fails the test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const README_BASE_URL = 'https://localhost:8443';
const README_CA = '.local/tls/ca.pem';

export interface Snippet {
  readonly name: string;
  /** The page it is on, relative to the repository root (README.md, docs/clients.md, …). */
  readonly page: string;
  readonly lang: string;
  readonly code: string;
  /** VAR=value pairs from the snippet's run line (first comment line), as written. */
  readonly runEnv: Readonly<Record<string, string>>;
}

const MARKER = /^<!-- snippet: ([a-z0-9-]+) -->\n```([a-z]+)\n([\s\S]*?)\n```$/gm;

/** The pages users read, relative to `repoRoot`: README.md, then docs/*.md. */
function docPages(repoRoot: string): string[] {
  const docs = readdirSync(join(repoRoot, 'docs')).filter((f) => f.endsWith('.md'));
  return ['README.md', ...docs.sort().map((f) => `docs/${f}`)];
}

/** Every marked snippet of the pages under `repoRoot`, by name; a name used twice, on any pages, is an error. */
export function readDocSnippets(repoRoot: string): Map<string, Snippet> {
  const snippets = new Map<string, Snippet>();
  for (const page of docPages(repoRoot)) {
    for (const [, name, lang, code] of readFileSync(join(repoRoot, page), 'utf8').matchAll(MARKER)) {
      const seen = snippets.get(name!);
      if (seen) throw new Error(`snippet ${name} appears twice (${seen.page}, ${page})`);
      snippets.set(name!, { name: name!, page, lang: lang!, code: code!, runEnv: runLineEnv(code!) });
    }
  }
  return snippets;
}

function runLineEnv(code: string): Record<string, string> {
  const first = code.split('\n', 1)[0]!.replace(/^(\/\/|#)\s*/, '');
  if (first === code.split('\n', 1)[0]) return {};
  const env: Record<string, string> = {};
  for (const word of first.split(/\s+/)) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word);
    if (!m) break;
    env[m[1]!] = m[2]!;
  }
  return env;
}

/**
 * The snippet's code and run-line environment with the documented base URL and CA path replaced
 * by the test stack's; throws when the snippet does not use the base URL (it would not be
 * talking to the stack under test).
 */
export function pointAt(snippet: Snippet, baseUrl: string, caFile: string): { code: string; env: Record<string, string> } {
  if (!snippet.code.includes(README_BASE_URL))
    throw new Error(`${snippet.page}'s snippet ${snippet.name} no longer uses ${README_BASE_URL}`);
  const swap = (text: string) => text.replaceAll(README_BASE_URL, baseUrl).replaceAll(README_CA, caFile);
  const env = Object.fromEntries(Object.entries(snippet.runEnv).map(([k, v]) => [k, swap(v)]));
  return { code: swap(snippet.code), env };
}
