/**
 * Each setting is declared once (contract/settings.ts), with its default and meaning, and the
 * configuration reference (docs/configuration.md) is generated from the declarations. This fails
 * when the page differs from them, when a reader reads a variable declared nowhere or a declared
 * one is read nowhere, and when a reader's literal default differs from the declared one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';
import { SETTINGS } from '../../contract/settings.js';
import { CONFIGURATION_PAGE, settingsTable, withTable } from '../../scripts/docs/configuration.js';

/** Every module that reads settings from the environment (test/contract/env-readers.unit.test.ts keeps services to their config.ts). */
const READERS = [
  'authz/src/config.ts',
  'embedder/src/config.ts',
  'admin/src/config.ts',
  'contract/access-settings.ts',
  'contract/env.ts',
  'contract/redis-target.ts',
  'contract/secrets.ts',
  'envoy/render.ts',
  'scripts/stack/settings.ts',
];
/** Upper-case strings in the readers that are not variables. */
const NOT_SETTINGS = new Set([
  'READONLY', // the Redis error a demoted primary answers writes with
  'INIT_CWD', // npm's: where `npm run admin` was typed, so the CLI's relative paths mean what they say
  'ADMIN_ACTOR_HEADER', // retired: admin refuses to start with it, naming what replaced it
]);

/** Code without comments: a comment may name a variable it does not read. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** The variables a reader's code reads: a call's first argument, `env.NAME`, and secrets' NAME and NAME_FILE. */
function variablesRead(text: string): string[] {
  const body = code(text);
  const names = [
    ...[...body.matchAll(/\(\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]!),
    ...[...body.matchAll(/\benv\.([A-Z][A-Z0-9_]+)\b/g)].map((m) => m[1]!),
    ...[...body.matchAll(/\(\s*read\s*,\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]!),
    ...[...body.matchAll(/\bread(?:Secret|Token)\(\s*read\s*,\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => `${m[1]}_FILE`),
  ];
  return names.filter((n) => !NOT_SETTINGS.has(n));
}

/** `read.integer('NAME', 123` / `read.string('NAME', 'text'`: the literal defaults in a reader. */
function literalDefaults(text: string): Array<[string, string]> {
  const body = code(text);
  const pairs = (pattern: RegExp) => [...body.matchAll(pattern)].map((m): [string, string] => [m[1]!, m[2]!]);
  return [
    ...pairs(/read\.integer\(\s*'([A-Z][A-Z0-9_]+)',\s*([0-9_]+)\s*[,)]/g).map(([name, n]): [string, string] => [
      name,
      n.replaceAll('_', ''),
    ]),
    ...pairs(/read\.(?:string|oneOf|matching)\(\s*'([A-Z][A-Z0-9_]+)',\s*'([^']*)'/g),
    ...pairs(/\benv\.([A-Z][A-Z0-9_]+) \|\| '([^']*)'/g),
  ];
}

/** The declared default of one variable, when the declaration gives it as one literal (`` `60` ``). */
function declaredLiteral(name: string): string | undefined {
  const setting = SETTINGS.find((s) => s.names.includes(name))!;
  const parts = setting.default.split(' / ');
  const part = parts.length === setting.names.length ? parts[setting.names.indexOf(name)]! : setting.default;
  return /^`[^`]*`$/.test(part) ? part.slice(1, -1) : undefined;
}

const declared = SETTINGS.flatMap((s) => s.names);
const read = new Map(READERS.map((file) => [file, readFileSync(join(repoRoot, file), 'utf8')]));

describe('the settings', () => {
  it('are each declared once', () => {
    expect(declared.length).toBeGreaterThan(60);
    expect(declared.filter((name, i) => declared.indexOf(name) !== i)).toEqual([]);
  });

  it('docs/configuration.md is the table generated from the declarations (npx tsx scripts/docs/configuration.ts --write)', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    expect(page).toBe(withTable(page, settingsTable()));
  });

  it('every variable a reader reads is declared, and every declared one is read', () => {
    const used = new Set([...read.values()].flatMap(variablesRead));
    expect([...used].filter((name) => !declared.includes(name)).sort()).toEqual([]);
    expect(declared.filter((name) => !used.has(name)).sort()).toEqual([]);
  });

  it("a reader's literal default is the declared one", () => {
    const compared = [...read.values()].flatMap(literalDefaults).filter(([name]) => declaredLiteral(name) !== undefined);
    expect(compared.length, 'defaults compared').toBeGreaterThan(30);
    const differing = [...read.entries()].flatMap(([file, text]) =>
      literalDefaults(text)
        .filter(([name, value]) => {
          const literal = declaredLiteral(name);
          return literal !== undefined && literal !== value;
        })
        .map(([name, value]) => `${file}: ${name} defaults to ${value}, declared ${declaredLiteral(name)}`),
    );
    expect(differing).toEqual([]);
  });

  it('the checks see what they look for', () => {
    const sample = "read.integer('A_MS', 1_000, 1); env.B_X; readSecret(read, 'C_SECRET', '.f', root); // read.string('D', 'x')";
    expect(variablesRead(sample).sort()).toEqual(['A_MS', 'B_X', 'C_SECRET', 'C_SECRET_FILE']);
    expect(literalDefaults(sample)).toEqual([['A_MS', '1000']]);
    expect(
      withTable(
        'a\n<!-- settings: generated from contract/settings.ts by scripts/docs/configuration.ts; edit there -->\nold\n<!-- settings: end -->\n',
        'new',
      ),
    ).toContain('\nnew\n');
  });
});
