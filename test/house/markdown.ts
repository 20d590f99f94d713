/** Reading Markdown the way GitHub renders it, for the tests that keep the pages' links and paths true. */
import { dirname, join, normalize } from 'node:path';

/** The text outside fenced code blocks and inline code spans (where links and headings are real). */
export function proseOf(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for each heading (lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2 …). */
export function headingSlugs(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) slugs.add(id!);
  return slugs;
}

/** How `brokenLinks` sees the repository: whether a path exists, and a Markdown file's heading slugs. */
export interface LinkTargets {
  exists(path: string): boolean;
  /** The slugs of `path` when it is a Markdown file, else undefined (its anchors are not checked). */
  slugs(path: string): Set<string> | undefined;
}

/** Each relative link of `page` (a path from the repository root) whose file or heading is missing, as `page: target`. */
export function brokenLinks(page: string, markdown: string, targets: LinkTargets): string[] {
  const broken: string[] = [];
  for (const [, target] of proseOf(markdown).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // https:, mailto: …
    const [path, anchor] = target!.split('#', 2) as [string, string | undefined];
    const file = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)));
    const ok =
      !file.startsWith('..') && targets.exists(file) && (anchor === undefined || targets.slugs(file)?.has(anchor.toLowerCase()) !== false);
    if (!ok) broken.push(`${page}: ${target}`);
  }
  return broken;
}

/**
 * The repository paths `markdown` names in backticks: a token of path characters with a slash whose
 * first folder is one of `topLevel` (`contract/redis/settlement.lua`, `authz/src/`); commands, URLs,
 * placeholders (`<env>`, `*`) and `.local/` (made at run time, never in `topLevel`) are not paths
 * to check.
 */
export function namedPaths(markdown: string, topLevel: ReadonlySet<string>): string[] {
  return [...markdown.matchAll(/`([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*\/?)`/g)]
    .map((m) => m[1]!)
    .filter((token) => token.includes('/') && !token.startsWith('.local/') && topLevel.has(token.split('/')[0]!));
}

/** The source files `markdown` names in backticks by their name alone (`check-limits.lua`, `config.ts`). */
export function namedSourceFiles(markdown: string): string[] {
  return [...proseCode(markdown).matchAll(/`([A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:ts|lua|mjs|js|sh|py))`/g)].map((m) => m[1]!);
}

/** The text outside fenced code blocks, inline code kept (where a page names files). */
function proseCode(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}
