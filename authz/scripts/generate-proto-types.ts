/**
 * Regenerates `authz/generated` (TypeScript types for the loaded protos) with
 * proto-loader-gen-types, using the runtime loader's own options. Never edit the output by
 * hand; test/authz/proto-types.test.ts fails when it is stale.
 *
 *   npx tsx authz/scripts/generate-proto-types.ts [outDir]
 */
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LOADER_OPTIONS, PROTO_FILES, PROTO_INCLUDE_DIRS } from '../src/edge/protos.js';
import { repoRoot } from '../../contract/repo-root.js';

/** Writes the generated types into `outDir` (relative to the repository root). */
export function generateProtoTypes(outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
  const args = [
    '--grpcLib=@grpc/grpc-js',
    // NodeNext resolution needs explicit extensions in relative imports.
    '--importFileExtension=.js',
    `--keepCase=${LOADER_OPTIONS.keepCase}`,
    '--longs=String',
    '--enums=String',
    `--defaults=${LOADER_OPTIONS.defaults}`,
    `--oneofs=${LOADER_OPTIONS.oneofs}`,
    ...PROTO_INCLUDE_DIRS.flatMap((dir) => ['-I', dir]),
    '-O',
    outDir,
    ...PROTO_FILES,
  ];
  execFileSync(join(repoRoot, 'node_modules/.bin/proto-loader-gen-types'), args, { cwd: repoRoot });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  generateProtoTypes(process.argv[2] ?? 'authz/generated');
}
