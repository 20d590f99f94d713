/**
 * The client snippets of README.md, taken as written: each fenced block right after a
 * `<!-- snippet: NAME -->` marker. A snippet's first comment line may say how to run it
 * (`// NODE_EXTRA_CA_CERTS=.local/tls/ca.pem node embed.mjs`); its leading VAR=value words are
 * the environment the README tells the user to set. Pointing a snippet at a test stack
 * replaces only the documented base URL and CA path, and fails when either is missing, so a
 * README edit that drifts from what the test runs fails the test.
 */
import { readFileSync } from 'node:fs';

const README_BASE_URL = 'https://localhost:8443';
const README_CA = '.local/tls/ca.pem';

export interface Snippet {
  readonly name: string;
  readonly lang: string;
  readonly code: string;
  /** VAR=value pairs from the snippet's run line (first comment line), as written. */
  readonly runEnv: Readonly<Record<string, string>>;
}

const MARKER = /^<!-- snippet: ([a-z0-9-]+) -->\n```([a-z]+)\n([\s\S]*?)\n```$/gm;

/** Every marked snippet of `markdown`, by name; a name used twice is an error. */
function readmeSnippets(markdown: string): Map<string, Snippet> {
  const snippets = new Map<string, Snippet>();
  for (const [, name, lang, code] of markdown.matchAll(MARKER)) {
    if (snippets.has(name!)) throw new Error(`README snippet ${name} appears twice`);
    snippets.set(name!, { name: name!, lang: lang!, code: code!, runEnv: runLineEnv(code!) });
  }
  return snippets;
}

/** The README's snippets (README.md at `path`). */
export function readReadmeSnippets(path: string): Map<string, Snippet> {
  return readmeSnippets(readFileSync(path, 'utf8'));
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
 * The snippet's code and run-line environment with the README's base URL and CA path replaced
 * by the test stack's; throws when the snippet does not use the base URL (it would not be
 * talking to the stack under test).
 */
export function pointAt(snippet: Snippet, baseUrl: string, caFile: string): { code: string; env: Record<string, string> } {
  if (!snippet.code.includes(README_BASE_URL)) throw new Error(`README snippet ${snippet.name} no longer uses ${README_BASE_URL}`);
  const swap = (text: string) => text.replaceAll(README_BASE_URL, baseUrl).replaceAll(README_CA, caFile);
  const env = Object.fromEntries(Object.entries(snippet.runEnv).map(([k, v]) => [k, swap(v)]));
  return { code: swap(snippet.code), env };
}
