/**
 * The house is kept by tools, in `make test` as in `make lint`: every source file formatted
 * (Biome), no lint error (Biome) and no unused file, export or dependency (knip). Each check is
 * also run on a small bad sample, so a check that stopped looking could not pass.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/stack.js';

const BIOME = join(repoRoot, 'node_modules', '.bin', 'biome');
const KNIP = join(repoRoot, 'node_modules', '.bin', 'knip');
// Exactly what `npm run lint` (and so `make lint`) runs.
const BIOME_CHECK = ['ci', '--error-on-warnings', '--colors=off', '.'];
const KNIP_CHECK = ['--no-progress', '--treat-config-hints-as-errors'];

function run(bin: string, args: readonly string[], cwd: string): { status: number | null; output: string } {
  const result = spawnSync(bin, args, { cwd, encoding: 'utf8', timeout: 110_000, env: { ...process.env, NO_COLOR: '1' } });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const scratch: string[] = [];
function scratchDir(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'house-'));
  scratch.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe('the house tools', () => {
  it('every source file is formatted and lint-clean (biome ci)', { timeout: 120_000 }, () => {
    const { status, output } = run(BIOME, BIOME_CHECK, repoRoot);
    expect(output).toMatch(/Checked \d+ files/);
    // On failure the message is Biome's own report: which file, which rule, `make format` fixes layout.
    expect(status, output).toBe(0);
  });

  it('no file, export or dependency is unused (knip)', { timeout: 120_000 }, () => {
    const { status, output } = run(KNIP, KNIP_CHECK, repoRoot);
    expect(status, output).toBe(0);
  });

  it('package-lock.json has an entry for every optional platform package, so npm ci accepts it', () => {
    // npm records only the platform packages the registry serves; the one this project reaches
    // lacks some (biome's and oxc-parser's for other systems), and `npm ci` then refuses the
    // whole lock. Each needs an entry { version, os, cpu, optional: true }, which npm skips here.
    type Entry = { optionalDependencies?: Record<string, string> };
    const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, Entry> };
    const missing = Object.values(lock.packages).flatMap((entry) =>
      Object.keys(entry.optionalDependencies ?? {}).filter((name) => !(`node_modules/${name}` in lock.packages)),
    );
    expect(missing).toEqual([]);
  });

  it('biome fails on an unformatted file and on a lint error (the check is live)', () => {
    const dir = scratchDir({
      'format.ts': 'export const quoted = "double";\n',
      'lint.ts': 'export function pick(a: number, b: number): number {\n  if ((a = b)) return a;\n  return 0;\n}\n',
    });
    copyFileSync(join(repoRoot, 'biome.jsonc'), join(dir, 'biome.jsonc'));
    const { status, output } = run(BIOME, ['ci', '--vcs-enabled=false', ...BIOME_CHECK.slice(1)], dir);
    expect(status).not.toBe(0);
    expect(output).toMatch(/format\.ts format/);
    expect(output).toMatch(/lint\.ts:2:\d+ lint\/suspicious\/noAssignInExpressions/);
  });

  it('knip fails on a new unused export (the check is live)', { timeout: 60_000 }, () => {
    const dir = scratchDir({
      'package.json': '{ "name": "house-sample", "private": true, "type": "module" }\n',
      'knip.json': '{ "entry": ["main.ts"], "project": ["*.ts"] }\n',
      'main.ts': "import { used } from './lib.ts';\nconsole.log(used);\n",
      'lib.ts': 'export const used = 1;\nexport const forgotten = 2;\n',
    });
    const { status, output } = run(KNIP, KNIP_CHECK, dir);
    expect(status).toBe(1);
    expect(output).toMatch(/Unused exports \(1\)\s+forgotten\s+lib\.ts/);
  });
});
