/**
 * The services share a contract, never each other's files: every file under authz/, embedder/
 * and admin/ may reach only its own folder, the shared folders (contract/, openapi/) and
 * packages. Each image copies exactly its own folder and the shared ones, so an import across
 * would start in the tests and crash in the image (ERR_MODULE_NOT_FOUND).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { referencedPaths, sourceFiles } from '../support/references.js';
import { repoRoot } from '../support/stack.js';

const SERVICES = ['authz', 'embedder', 'admin'] as const;
const SHARED = ['contract', 'openapi'] as const;

/** The top-level folder a relative reference from `file` lands in. */
function topFolder(file: string, specifier: string): string {
  return relative(repoRoot, resolve(dirname(file), specifier)).split(sep)[0]!;
}

describe('service boundaries', () => {
  it.each(SERVICES)('%s reaches only its own folder and the shared contract', (service) => {
    const crossings: string[] = [];
    for (const file of sourceFiles(join(repoRoot, service))) {
      for (const specifier of referencedPaths(readFileSync(file, 'utf8'))) {
        const top = topFolder(file, specifier);
        // Not even the repository root itself: a service finds it through contract/repo-root.ts.
        if (top !== service && !(SHARED as readonly string[]).includes(top)) {
          crossings.push(`${relative(repoRoot, file)} -> ${specifier}`);
        }
      }
    }
    expect(crossings).toEqual([]);
  });

  it('the shared folders import no service', () => {
    const crossings = SHARED.flatMap((shared) =>
      sourceFiles(join(repoRoot, shared)).flatMap((file) =>
        referencedPaths(readFileSync(file, 'utf8'))
          .filter((s) => (SERVICES as readonly string[]).includes(topFolder(file, s)))
          .map((s) => `${relative(repoRoot, file)} -> ${s}`),
      ),
    );
    expect(crossings).toEqual([]);
  });

  it('finds every form of reference (the check is live)', () => {
    const text = [
      "import { a } from '../../embedder/src/x.js';",
      "import type { B } from '../generated/b.js';",
      "export { c } from './c.js';",
      "import './side-effect.js';",
      "const m = await import('../../authz/src/m.js');",
      "const p = new URL('../../authz/proto/p.proto', import.meta.url);",
      "import pino from 'pino';",
    ].join('\n');
    expect(referencedPaths(text)).toEqual(
      expect.arrayContaining([
        '../../embedder/src/x.js',
        '../generated/b.js',
        './c.js',
        './side-effect.js',
        '../../authz/src/m.js',
        '../../authz/proto/p.proto',
      ]),
    );
    expect(referencedPaths(text)).not.toContain('pino');
  });

  // admin's image (deploy/admin/Containerfile) is checked from the day it exists; authz's and
  // the embedder's must exist now.
  const imaged = SERVICES.filter((service) => existsSync(join(repoRoot, 'deploy', service, 'Containerfile')));

  it('authz and the embedder have images', () => {
    expect(imaged).toEqual(expect.arrayContaining(['authz', 'embedder']));
  });

  it.each(imaged)('the %s image copies its own folder and every shared one, and no other service', (service) => {
    const containerfile = readFileSync(join(repoRoot, 'deploy', service, 'Containerfile'), 'utf8');
    const ignore = readFileSync(join(repoRoot, 'deploy', service, 'Containerfile.dockerignore'), 'utf8');
    for (const folder of [service, ...SHARED]) {
      expect(containerfile).toMatch(new RegExp(`^COPY ${folder} \\./${folder}$`, 'm'));
      expect(ignore).toMatch(new RegExp(`^!${folder}/\\*\\*$`, 'm'));
    }
    for (const other of SERVICES.filter((s) => s !== service)) {
      expect(containerfile).not.toMatch(new RegExp(`^COPY .*\\b${other}\\b`, 'm'));
      expect(ignore).not.toMatch(new RegExp(`^!${other}/`, 'm'));
    }
  });
});
