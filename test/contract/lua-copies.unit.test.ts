/**
 * The settlement functions (contract/redis/settlement.lua, batch.lua) run inside Redis and cannot
 * import the TypeScript that owns a fact, so they hold copies; each copy is tied here to its
 * owner, so changing the fact in one place fails until the Lua says the same. (The request-id
 * rule's copy: test/contract/request-id.unit.test.ts; the GCRA arithmetic: test/authz/limits-redis.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GRANT_CLOCK_SKEW_MS } from '../../contract/grant.js';
import { ConfigError } from '../../contract/env.js';
import { repoRoot } from '../../contract/repo-root.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';

/** The number a Lua file assigns to `local NAME = …` (digits, or a product of digits). */
function luaConstant(file: string, name: string): number {
  const source = readFileSync(join(repoRoot, 'contract/redis', file), 'utf8');
  const m = new RegExp(`^local ${name} = ([\\d *]+)$`, 'm').exec(source);
  if (!m) throw new Error(`${file} has no local ${name} = <number>`);
  return m[1]!.split('*').reduce((product, factor) => product * Number(factor.trim()), 1);
}

/** The body lines of the civil-date arithmetic (Hinnant's days-to-date) in a Lua file, from `local era` to the year fix. */
function civilArithmetic(file: string): string[] {
  const lines = readFileSync(join(repoRoot, 'contract/redis', file), 'utf8')
    .split('\n')
    .map((l) => l.trim());
  const from = lines.findIndex((l) => l.startsWith('local era = '));
  const to = lines.findIndex((l, i) => i > from && l === 'if m <= 2 then y = y + 1 end');
  if (from < 0 || to < 0) throw new Error(`${file} has no civil-date arithmetic`);
  return lines.slice(from, to + 1);
}

describe("the settlement functions' copies", () => {
  it('the UTC date arithmetic is the same in both libraries (a Redis function library cannot load another)', () => {
    expect(civilArithmetic('batch.lua')).toEqual(civilArithmetic('settlement.lua'));
  });

  it('the routing key is read the same way in both libraries (the organization of <prefix>route:{<org>})', () => {
    const orgOf = (file: string) => {
      const source = readFileSync(join(repoRoot, 'contract/redis', file), 'utf8');
      const m = /^local ROUTE = [^\n]*\nlocal function org_of\(keys\)\n[\s\S]*?\nend$/m.exec(source);
      if (!m) throw new Error(`${file} has no org_of`);
      return m[0];
    };
    expect(orgOf('batch.lua')).toEqual(orgOf('settlement.lua'));
  });

  it("a grant's clock skew is contract/grant.ts's, in the settlement and in the batch functions", () => {
    expect(luaConstant('settlement.lua', 'SKEW_MS')).toBe(GRANT_CLOCK_SKEW_MS);
    expect(luaConstant('batch.lua', 'GRANT_SKEW_MS')).toBe(GRANT_CLOCK_SKEW_MS);
  });

  it("the embedder's wait for replicas (SETTLEMENT_WAIT_MS) cannot reach the record's void window", () => {
    const voidWindow = luaConstant('settlement.lua', 'VOID_WINDOW_MS');
    const problems = (wait: number) => {
      try {
        loadEmbedderConfig({ GRANT_SECRET: 'g'.repeat(40), REDIS_URL_FILE: '/nonexistent', SETTLEMENT_WAIT_MS: String(wait) });
        return [];
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        return error.problems.filter((p) => p.startsWith('SETTLEMENT_WAIT_MS'));
      }
    };
    expect(problems(voidWindow)).toHaveLength(1);
    expect(problems(500)).toEqual([]);
  });

  it('the check reads what it looks for', () => {
    expect(luaConstant('settlement.lua', 'MONTH_TTL_MS')).toBe(40 * 86_400_000);
    expect(() => luaConstant('settlement.lua', 'NO_SUCH_CONSTANT')).toThrow(/no local NO_SUCH_CONSTANT/);
  });
});
