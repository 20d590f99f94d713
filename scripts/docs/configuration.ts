/**
 * docs/configuration.md's table of settings, generated from contract/settings.ts (the one place
 * each setting is declared). `npx tsx scripts/docs/configuration.ts --write` rewrites the table
 * between the page's markers; without --write it prints the table.
 * test/contract/settings.unit.test.ts fails when the page and the declarations differ.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../../contract/repo-root.js';
import { SETTINGS, type Setting } from '../../contract/settings.js';

export const CONFIGURATION_PAGE = join(repoRoot, 'docs/configuration.md');
const BEGIN = '<!-- settings: generated from contract/settings.ts by scripts/docs/configuration.ts; edit there -->';
const END = '<!-- settings: end -->';

/** The Markdown table of `settings`, one row each. */
export function settingsTable(settings: readonly Setting[] = SETTINGS): string {
  const rows = settings.map((s) => `| ${s.names.map((n) => `\`${n}\``).join(' / ')} | ${s.default} | ${s.usedBy} | ${s.meaning} |`);
  return ['| Variable | Default | Used by | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The page with its generated table replaced by `table`; throws when the markers are missing. */
export function withTable(page: string, table: string): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/configuration.md lacks the markers ${BEGIN} … ${END}`);
  return `${page.slice(0, start + BEGIN.length)}\n${table}\n${page.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) {
    writeFileSync(CONFIGURATION_PAGE, withTable(readFileSync(CONFIGURATION_PAGE, 'utf8'), settingsTable()));
  } else {
    console.log(settingsTable());
  }
}
