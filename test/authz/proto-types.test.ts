import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateProtoTypes } from '../../authz/scripts/generate-proto-types.js';
import { repoRoot } from '../../contract/repo-root.js';

function files(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else found.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  };
  walk(dir);
  return found;
}

describe('authz/generated', () => {
  it('matches what proto-loader-gen-types makes from the pinned protos (run authz/scripts/generate-proto-types.ts)', () => {
    const fresh = mkdtempSync(join(tmpdir(), 'authz-proto-types-'));
    generateProtoTypes(fresh);
    const expected = files(fresh);
    const committed = files(join(repoRoot, 'authz/generated'));
    expect([...committed.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [path, text] of expected) expect(committed.get(path), path).toBe(text);
  });
});
