/**
 * Each setting is declared once (contract/settings.ts), with its default and meaning; readers take
 * their defaults from the declarations, and the configuration reference (docs/configuration.md) is
 * generated from them. This fails when the page differs from them, when a reader reads a variable
 * declared nowhere or a declared one is read nowhere, when a page's default does not name the
 * declared value, and when a reader falls back on a default of its own: every reader is run with
 * `settingDefault` watched, each variable it reads that has a declared default must have had that
 * default looked up, and changing the declaration (as an edit of contract/settings.ts would) must
 * change what the reader makes of it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadAdminConfig, loadCliConfig } from '../../admin/src/config.js';
import { loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
import type { Env } from '../../contract/env.js';
import { repoRoot } from '../../contract/repo-root.js';
import { SETTINGS } from '../../contract/settings.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';
import { settingsFromEnv } from '../../envoy/render.js';
import { targetsFromEnv } from '../../deploy/prometheus/render.js';
import { CONFIGURATION_PAGE, settingsTable, withTable } from '../../scripts/docs/configuration.js';
import { upSettings } from '../../scripts/stack/settings.js';

/**
 * contract/settings.ts's settingDefault, watched: every name whose declared default a reader
 * looked up, and declarations the test changes (what an edit of contract/settings.ts would do).
 */
const watched = vi.hoisted(() => ({ lookedUp: new Set<string>(), changed: new Map<string, unknown>() }));
vi.mock('../../contract/settings.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../contract/settings.js')>();
  const settingDefault: typeof real.settingDefault = (name) => {
    watched.lookedUp.add(name);
    return (watched.changed.has(name) ? watched.changed.get(name) : real.settingDefault(name)) as ReturnType<typeof real.settingDefault>;
  };
  return { ...real, settingDefault };
});

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
  'deploy/prometheus/render.ts',
  'scripts/stack/settings.ts',
];
/** Upper-case strings in the readers that are not variables. */
const NOT_SETTINGS = new Set([
  'READONLY', // the Redis error a demoted primary answers writes with
  'SENTINEL', // the Sentinel command the primary watch sends (SENTINEL get-master-addr-by-name)
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
    ...[...body.matchAll(/\bread(?:Secret|Token)(?:Values)?\(\s*read\s*,\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => `${m[1]}_FILE`),
  ];
  return names.filter((n) => !NOT_SETTINGS.has(n));
}

/**
 * A reader's own defaults, in the shapes the typed EnvReader still lets through: a value of its
 * own after `read.optional('NAME')` (or `optionalInteger`) or after `env.NAME`.
 */
function ownDefaults(text: string): Array<[string, string]> {
  const body = code(text);
  const literal = String.raw`('[^']*'|"[^"]*"|\x60[^\x60$]*\x60|-?\d[\d_.]*|true|false)`;
  const pairs = (pattern: RegExp) => [...body.matchAll(pattern)].map((m): [string, string] => [m[1]!, m[2]!]);
  return [
    ...pairs(new RegExp(String.raw`read\.optional(?:Integer)?\(\s*'([A-Z][A-Z0-9_]+)'[^)]*\)\s*(?:\?\?|\|\|)\s*${literal}`, 'g')),
    ...pairs(new RegExp(String.raw`\benv\.([A-Z][A-Z0-9_]+)\s*(?:\?\?|\|\|)\s*${literal}`, 'g')),
  ];
}

const declared = SETTINGS.flatMap((s) => s.names);
const withDefault = new Set(SETTINGS.flatMap((s) => s.names.filter((_, i) => s.values[i] !== null)));
const read = new Map(READERS.map((file) => [file, readFileSync(join(repoRoot, file), 'utf8')]));

/**
 * Each reader, run on an environment that takes it down its paths: every variable it reads from
 * `env` is recorded. Readers that find a setting missing throw once all are read; that is fine here.
 */
const AUDIT_SECRET = 'a'.repeat(40); // else admin would create .local/audit-secret in the repository
const RUNS: ReadonlyArray<[string, (env: Env) => unknown, Env]> = [
  ['authz', loadAuthzConfig, {}],
  ['authz (the embedder user)', loadAuthzConfig, { EMBEDDER_REDIS_USERNAME: 'u' }],
  ['embedder', loadEmbedderConfig, {}],
  ['admin server', loadAdminConfig, { AUDIT_SECRET }],
  [
    'admin server (single sign-on)',
    loadAdminConfig,
    {
      AUDIT_SECRET,
      OIDC_ISSUER: 'https://idp.example.org',
      OIDC_CLIENT_ID: 'c',
      OIDC_CLIENT_SECRET: 's',
      ADMIN_PUBLIC_URL: 'https://a.example.org',
    },
  ],
  ['admin CLI', loadCliConfig, { AUDIT_SECRET }],
  ['Envoy', settingsFromEnv, {}],
  ['stack', upSettings, {}],
  ['Prometheus', targetsFromEnv, {}],
];
/** Variables a reader reads whose declared default is not its own, and why. */
const NOT_DEFAULTED = new Set([
  // The declared default is where the CLI looks; the server registers a bootstrap token only when it is named.
  'admin server: ADMIN_TOKEN_FILE',
  'admin server (single sign-on): ADMIN_TOKEN_FILE',
  // Unset, make up runs a Redis of its own (STACK_REDIS_PORT) rather than use the services' default one.
  'stack: REDIS_URL',
  // Handed to the services only when set; unset, they take the declared default themselves.
  'stack: REDIS_KEY_PREFIX',
]);

/** What `load` reads from `env`, which declared defaults it looks up, and what it makes of them (its result or its error). */
function runReader(load: (env: Env) => unknown, env: Env): { read: Set<string>; lookedUp: Set<string>; outcome: string } {
  const names = new Set<string>();
  const recording = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') names.add(key);
      return Reflect.get(target, key);
    },
  });
  watched.lookedUp.clear();
  let outcome: string;
  try {
    // A secret's values are private fields: show them.
    outcome = JSON.stringify(load(recording), (_, v) => (v instanceof Object && 'accepted' in v ? [v.file, v.accepted] : v));
  } catch (error) {
    if ((error as Error).name !== 'ConfigError') throw error;
    outcome = (error as Error).message;
  }
  return { read: names, lookedUp: new Set(watched.lookedUp), outcome };
}

/** A different value of the same type: what changing a declaration would do. */
const changedValue = (value: unknown) =>
  typeof value === 'number' ? value + 1 : typeof value === 'boolean' ? !value : `${String(value)}-changed`;

describe('the settings', () => {
  it('are each declared once', () => {
    expect(declared.length).toBeGreaterThan(60);
    expect(declared.filter((name, i) => declared.indexOf(name) !== i)).toEqual([]);
  });

  it('docs/configuration.md is the table generated from the declarations (npx tsx scripts/docs/configuration.ts --write)', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    expect(page).toBe(withTable(page, settingsTable()));
  });

  it("a default the page shows in words names each declared value, as the reader's code takes it", () => {
    const missing = SETTINGS.flatMap((s) =>
      s.values.flatMap((value, i) => (value === null || s.default.includes(`\`${value}\``) ? [] : [`${s.names[i]}: ${value}`])),
    );
    expect(missing).toEqual([]);
  });

  it('every variable a reader reads is declared, and every declared one is read', () => {
    const used = new Set([...read.values()].flatMap(variablesRead));
    expect([...used].filter((name) => !declared.includes(name)).sort()).toEqual([]);
    expect(declared.filter((name) => !used.has(name)).sort()).toEqual([]);
  });

  it('no reader falls back on a value of its own for a variable declared with a default', () => {
    const own = [...read.entries()].flatMap(([file, text]) =>
      ownDefaults(text)
        .filter(([name]) => withDefault.has(name))
        .map(([name, value]) => `${file}: ${name} falls back on ${value}`),
    );
    expect(own).toEqual([]);
  });

  it('each reader, run, takes the default of every declared variable it reads from the declaration, and reads no other', () => {
    const unlooked: string[] = [];
    const undeclared: string[] = [];
    let checked = 0;
    for (const [reader, load, env] of RUNS) {
      const { read: names, lookedUp } = runReader(load, env);
      for (const name of names) {
        if (!/^[A-Z][A-Z0-9_]+$/.test(name) || NOT_SETTINGS.has(name)) continue;
        if (!declared.includes(name)) undeclared.push(`${reader}: ${name}`);
        else if (withDefault.has(name) && !lookedUp.has(name) && !NOT_DEFAULTED.has(`${reader}: ${name}`))
          unlooked.push(`${reader}: ${name}`);
        else checked++;
      }
    }
    expect(undeclared).toEqual([]);
    expect(unlooked).toEqual([]);
    expect(checked, 'variables checked').toBeGreaterThan(100);
  });

  it('changing a declared default changes what every reader that reads the variable makes of it: one edit', () => {
    const unchanged: string[] = [];
    let changed = 0;
    // Secrets given, so each reader gets past them and shows what it made of every other default.
    const given = {
      GRANT_SECRET: 'g'.repeat(40),
      KEY_HASH_SECRET: 'k'.repeat(40),
      MODEL_ID: 'm',
      BATCH_KEK: 'b'.repeat(64),
      EMBEDDER_REDIS_PASSWORD: 'p'.repeat(20),
    };
    for (const [reader, load, runEnv] of RUNS) {
      const env = { ...runEnv, ...given };
      const base = runReader(load, env);
      expect(base.outcome, reader).not.toMatch(/^invalid/);
      for (const name of [...base.read].filter((n) => withDefault.has(n) && !NOT_DEFAULTED.has(`${reader}: ${n}`))) {
        const value = SETTINGS.flatMap((s) => s.values.filter((_, i) => s.names[i] === name))[0];
        watched.changed.set(name, changedValue(value));
        try {
          // A default file is read only when it exists (none does here, and a secret given directly
          // wins), so a changed name may show nowhere; the check above holds those to the declaration.
          if (runReader(load, env).outcome !== base.outcome) changed++;
          else if (!name.endsWith('_FILE')) unchanged.push(`${reader}: ${name}`);
        } finally {
          watched.changed.clear();
        }
      }
    }
    expect(unchanged).toEqual([]);
    expect(changed, 'defaults changed').toBeGreaterThan(80);
  });

  it('the checks see what they look for', () => {
    const sample =
      "read.integer('A_MS', 1); env.B_X; readSecretValues(read, 'C_SECRET', root); read.optional('D_X') ?? 'x'; env.E_X || 5; read.optional('G_X') ?? `a$" +
      "{b}`; // read.optional('F_X') ?? 1";
    expect(variablesRead(sample).sort()).toEqual(['A_MS', 'B_X', 'C_SECRET', 'C_SECRET_FILE', 'D_X', 'E_X', 'G_X']);
    expect(ownDefaults(sample)).toEqual([
      ['D_X', "'x'"],
      ['E_X', '5'],
    ]);
    // A reader with a default of its own looks nothing up: the run above would name it.
    const { read: names, lookedUp } = runReader((env) => env.GATEWAY_PORT ?? '8443', {});
    expect([...names]).toEqual(['GATEWAY_PORT']);
    expect(lookedUp.size).toBe(0);
    expect(
      withTable(
        'a\n<!-- settings: generated from contract/settings.ts by scripts/docs/configuration.ts; edit there -->\nold\n<!-- settings: end -->\n',
        'new',
      ),
    ).toContain('\nnew\n');
  });
});
