/**
 * The repository root is computed in one module, contract/repo-root.ts: no other source file
 * climbs from its own place to the root (`new URL('../..', import.meta.url)`), so moving a file
 * cannot move what it thinks the root is. scripts/images/build-service.mjs is the one exception:
 * plain Node runs it before anything is compiled, and it cannot import TypeScript.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';
import { sourceFiles } from '../support/references.js';

const CLIMB = /new URL\(\s*['"`](?:\.\.\/?)+['"`]\s*,\s*import\.meta\.url\s*\)|import\.meta\.dirname/;
const FOLDERS = ['admin', 'authz', 'bench', 'contract', 'embedder', 'envoy', 'openapi', 'scripts', 'test', 'deploy'];

describe('the repository root', () => {
  it('is computed only in contract/repo-root.ts', () => {
    const climbers = FOLDERS.flatMap((folder) => sourceFiles(join(repoRoot, folder)))
      .filter((file) => CLIMB.test(readFileSync(file, 'utf8')))
      .map((file) => relative(repoRoot, file));
    // This file names the patterns to show the check sees them.
    expect(climbers.sort()).toEqual(['contract/repo-root.ts', 'scripts/images/build-service.mjs', 'test/contract/repo-root.unit.test.ts']);
  });

  it('is the folder that holds contract/, with no trailing slash', () => {
    expect(readFileSync(join(repoRoot, 'contract/repo-root.ts'), 'utf8')).toContain('export const repoRoot');
    expect(repoRoot.endsWith('/')).toBe(false);
  });

  it('the check sees each way of climbing', () => {
    for (const text of ["new URL('../../', import.meta.url)", 'new URL("..", import.meta.url)', 'resolve(import.meta.dirname, "..")'])
      expect(CLIMB.test(text), text).toBe(true);
    expect(CLIMB.test("new URL('./openapi.yaml', import.meta.url)")).toBe(false);
  });
});
