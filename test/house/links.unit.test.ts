/**
 * The documentation's links and paths stay true: every relative link in a Markdown file of ours
 * (README.md, docs/*.md, each part's README, BENCHMARKS.md …) names a file that exists, and its
 * `#anchor` a heading of that file (GitHub's slugs); every repository path a README names in
 * backticks (`contract/redis/settlement.lua`) exists. Moving a page or a file without its
 * links fails here rather than in a reader's browser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokenLinks, headingSlugs, namedPaths, namedSourceFiles, proseOf } from './markdown.js';
import { repoRoot } from '../../contract/repo-root.js';

/** Folders that hold no page of ours: installed, generated or version control's. */
const NOT_OURS = new Set(['node_modules', '.git', '.local', '.venv', '.venv-litellm', 'dist', 'coverage', '__pycache__']);

/** Every file under `dir` (relative to the repository root), the folders above left out. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '.' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return NOT_OURS.has(entry.name) ? [] : filesUnder(path);
    return entry.isFile() ? [path] : [];
  });
}

const ourFiles = filesUnder('.');
const markdownFiles = ourFiles.filter((f) => f.endsWith('.md'));
const fileNames = new Set(ourFiles.map((f) => f.split('/').at(-1)!));
const topLevel = new Set(readdirSync(repoRoot).filter((name) => !NOT_OURS.has(name)));
/** Output folders .gitignore names (`bench/results/*`): a page may name a file that a run writes there. */
const outputFolders = readFileSync(join(repoRoot, '.gitignore'), 'utf8')
  .split('\n')
  .filter((line) => /^[a-z][^!#*]*\/\*$/.test(line))
  .map((line) => line.slice(0, -1));

/**
 * Whether a path a page names is there: the file itself, or what makes it: the TypeScript source
 * of a compiled `.js` (what the images run), or a run's output (`bench/results/fleet.json`).
 */
function exists(path: string): boolean {
  if (existsSync(join(repoRoot, path))) return true;
  if (path.endsWith('.js') && existsSync(join(repoRoot, path.replace(/\.js$/, '.ts')))) return true;
  return outputFolders.some((folder) => path.startsWith(folder));
}

describe('the Markdown pages', () => {
  it('are found (README.md and docs/ among them)', () => {
    expect(markdownFiles).toContain('README.md');
    expect(markdownFiles.filter((f) => f.startsWith('docs/')).length).toBeGreaterThan(5);
  });

  it('link only to files and headings that exist', () => {
    const slugs = new Map<string, Set<string>>();
    const slugsOf = (file: string) => {
      if (!slugs.has(file)) slugs.set(file, headingSlugs(readFileSync(join(repoRoot, file), 'utf8')));
      return slugs.get(file)!;
    };
    const broken = markdownFiles.flatMap((file) =>
      brokenLinks(file, readFileSync(join(repoRoot, file), 'utf8'), {
        exists: (path) => existsSync(join(repoRoot, path)),
        slugs: (path) => (path.endsWith('.md') && statSync(join(repoRoot, path)).isFile() ? slugsOf(path) : undefined),
      }),
    );
    expect(broken).toEqual([]);
  });

  it('name in backticks only repository paths that exist (every README and docs page, from the root or its own folder)', () => {
    // The history of benchmark rounds names files as they were then (patches since removed).
    const pages = markdownFiles.filter((f) => (/(^|\/)README\.md$/.test(f) || f.startsWith('docs/')) && f !== 'docs/benchmarks-history.md');
    const missing = pages.flatMap((page) => {
      const here = dirname(page);
      const roots = new Set([...topLevel, ...(here === '.' ? [] : readdirSync(join(repoRoot, here)))]);
      return namedPaths(readFileSync(join(repoRoot, page), 'utf8'), roots)
        .filter((path) => !exists(path) && !exists(join(here, path)))
        .map((path) => `${page}: ${path}`);
    });
    expect(missing).toEqual([]);
  });
  it('name by their name alone only source files that exist somewhere (a layout row for a removed file)', () => {
    const pages = markdownFiles.filter((f) => /(^|\/)README\.md$/.test(f) || (f.startsWith('docs/') && f !== 'docs/benchmarks-history.md'));
    const missing = pages.flatMap((page) =>
      namedSourceFiles(readFileSync(join(repoRoot, page), 'utf8'))
        .filter((name) => !fileNames.has(name) && !(name.endsWith('.js') && fileNames.has(name.replace(/\.js$/, '.ts'))))
        .map((name) => `${page}: ${name}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('the checks themselves', () => {
  const exists = (path: string) => ['README.md', 'docs/a.md', 'docs'].includes(normalize(path));
  const slugs = (path: string) => (path.endsWith('.md') ? new Set(['quick-start', 'errors-in-each-client']) : undefined);

  it('find a missing file, a missing heading and a link from docs/ that forgot its ../', () => {
    const page = [
      '[ok](../README.md#quick-start) [dir](../docs) [web](https://example.org/x) [here](#errors-in-each-client)',
      '[gone](gone.md) [anchor](../README.md#no-such-heading) [forgot](README.md)',
    ].join('\n');
    expect(brokenLinks('docs/a.md', page, { exists, slugs })).toEqual([
      'docs/a.md: gone.md',
      'docs/a.md: ../README.md#no-such-heading',
      'docs/a.md: README.md',
    ]);
  });

  it('ignore links and headings inside code', () => {
    const page = '```sh\n# Not a heading\n[x](nowhere.md)\n```\n`[y](nowhere.md)`\n## Real heading\n';
    expect(brokenLinks('README.md', page, { exists, slugs })).toEqual([]);
    expect([...headingSlugs(page)]).toEqual(['real-heading']);
    expect(proseOf(page)).not.toContain('nowhere');
  });

  it("make GitHub's slugs, duplicates numbered", () => {
    const page = '# Errors\n## How a request is admitted, and why this way\n## `make check`: the loop\n## Errors\n';
    expect([...headingSlugs(page)]).toEqual(['errors', 'how-a-request-is-admitted-and-why-this-way', 'make-check-the-loop', 'errors-1']);
  });

  it('take source file names from backticks outside code blocks', () => {
    expect(namedSourceFiles('`check-limits.lua` and `redis.ts`, `a/b.ts`, `npm run x.ts`\n```sh\n`gone.ts`\n```')).toEqual([
      'check-limits.lua',
      'redis.ts',
    ]);
  });

  it('take repository paths from backticks, not commands, URLs or placeholders', () => {
    const page =
      '`contract/redis/settlement.lua`, `authz/src/`, `npm run admin`, `https://x/y.md`, `overlays/<env>/a.yaml`, `.local/tls/ca.pem`, `x-ratelimit-*`';
    expect(namedPaths(page, new Set(['contract', 'authz', 'overlays', '.local']))).toEqual(['contract/redis/settlement.lua', 'authz/src/']);
  });
});
