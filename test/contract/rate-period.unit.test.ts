/**
 * The rate limits' period has one owner, contract/rate-period.ts: authz's Check and GCRA math and
 * the embedder's admit, refund and void pass it to the settlement functions, which take it as an
 * argument (contract/redis/settlement.lua holds no period of its own). A second copy of the
 * constant anywhere, or a period written into the Lua, fails here.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PERIOD_MS } from '../../contract/rate-period.js';
import { repoRoot } from '../../contract/repo-root.js';
import { sourceFiles } from '../support/references.js';

const FOLDERS = ['admin', 'authz', 'bench', 'contract', 'embedder', 'envoy', 'scripts'];
/** A constant named like a period set to a number: `PERIOD_MS = 60_000`, `const WINDOW_MS = 60000`. */
const DECLARES_PERIOD = /\b[A-Z_]*PERIOD_MS\s*=\s*[\d_]+/;
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

describe('the rate limits period', () => {
  it('is a minute, declared only in contract/rate-period.ts', () => {
    expect(PERIOD_MS).toBe(60_000);
    const declaring = FOLDERS.flatMap((folder) => sourceFiles(join(repoRoot, folder)))
      .filter((file) => DECLARES_PERIOD.test(code(readFileSync(file, 'utf8'))))
      .map((file) => relative(repoRoot, file));
    expect(declaring).toEqual(['contract/rate-period.ts']);
  });

  it('is passed to every settlement function that counts with it, by authz and the embedder alike', () => {
    for (const file of ['authz/src/store/redis.ts', 'embedder/src/settlement/store.ts', 'authz/src/policy/limits.ts']) {
      const text = readFileSync(join(repoRoot, file), 'utf8');
      expect(text, file).toMatch(/import \{ PERIOD_MS \} from '\.\.\/\.\.\/\.\.\/contract\/rate-period\.js'/);
    }
    // The Lua takes the period as an argument and holds no minute of its own.
    const lua = readFileSync(join(repoRoot, 'contract/redis/settlement.lua'), 'utf8');
    expect(lua).not.toMatch(/\b60000\b|\b60 \* 1000\b/);
  });

  it('the check sees a copy', () => {
    expect(DECLARES_PERIOD.test(code('const PERIOD_MS = 60_000;'))).toBe(true);
    expect(DECLARES_PERIOD.test(code('// const PERIOD_MS = 60_000;'))).toBe(false);
    expect(DECLARES_PERIOD.test(code("import { PERIOD_MS } from './x.js';"))).toBe(false);
  });
});
