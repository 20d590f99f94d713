/**
 * Each service's src/ shows its layers in its folders, and the imports keep to them. main.ts (the
 * composition root) wires everything; config.ts is the parsed settings. A new top-level file or
 * folder fails here until it is given a layer, and each package that talks to the outside world
 * has one owning layer.
 *
 * - embedder: http/ is the edge; telemetry/ observes core/ and settlement/ from outside (it wraps
 *   them, they never call it); core/ batches work onto model/; settlement/ and model/ import no
 *   other layer; batch/ (the Batch API's files, queue and workers) sits below http/ and above
  core/ and settlement/.
 * - authz: edge/ is the gRPC face (Check, health, the caller check, the budget gate); telemetry/
 *   wraps the store and the key cache from outside; store/ (the only ioredis importer) reads Redis
 *   and caches key lookups; policy/ is pure.
 * - admin: http/ (API, sessions, OIDC, the console's files) and cli/ are the two front ends;
 *   operations/ is what both call; audit/ chains and checks the trail; store/ is the only ioredis
 *   importer; console/ holds browser files only http/ serves. config.ts checks names with
 *   operations/rules.ts and yields what operations/deps.ts opens.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { referencedPaths, sourceFiles } from '../support/references.js';
import { repoRoot } from '../support/stack.js';

interface Layering {
  /** Each layer and the layers it may import (besides itself and anything outside src/). */
  readonly mayImport: Readonly<Record<string, readonly string[]>>;
  /** The packages only one layer may import: one module owns each outside thing. */
  readonly ownedPackages: Readonly<Record<string, string>>;
}

const TELEMETRY_SDK = {
  'prom-client': 'telemetry',
  '@opentelemetry/sdk-trace-node': 'telemetry',
  '@opentelemetry/exporter-trace-otlp-proto': 'telemetry',
  '@opentelemetry/resources': 'telemetry',
};

const LAYERS: Readonly<Record<'embedder' | 'authz' | 'admin', Layering>> = {
  embedder: {
    mayImport: {
      main: ['config', 'http', 'telemetry', 'batch', 'core', 'settlement', 'model'],
      http: ['config', 'telemetry', 'batch', 'core', 'settlement', 'model'],
      // The Batch API's files, queue and workers: below the edge (which holds the line's rules and
      // hands them in), above the engine and the settlement it runs lines through.
      batch: ['config', 'core', 'settlement'],
      telemetry: ['config', 'core', 'settlement'],
      core: ['config', 'settlement', 'model'],
      settlement: ['config'],
      model: [],
      config: [],
    },
    ownedPackages: {
      ...TELEMETRY_SDK,
      'onnxruntime-node': 'model',
      '@huggingface/tokenizers': 'model',
      ioredis: 'settlement',
      pg: 'batch',
      '@fastify/busboy': 'http',
    },
  },
  authz: {
    mayImport: {
      main: ['config', 'edge', 'telemetry', 'store', 'policy'],
      edge: ['config', 'telemetry', 'store', 'policy'],
      telemetry: ['config', 'store', 'policy'],
      store: ['config', 'policy'],
      policy: [],
      config: [],
    },
    ownedPackages: { ...TELEMETRY_SDK, ioredis: 'store', '@grpc/proto-loader': 'edge' },
  },
  admin: {
    mayImport: {
      main: ['config', 'http', 'cli', 'operations', 'audit', 'store'],
      http: ['config', 'operations', 'audit', 'store', 'console'],
      cli: ['config', 'operations', 'store'],
      operations: ['audit', 'store'],
      audit: ['store'],
      store: [],
      console: [],
      config: ['operations'],
    },
    ownedPackages: { ioredis: 'store', fastify: 'http', 'openid-client': 'http', 'prom-client': 'http' },
  },
};

/** The layer of a path relative to src/: its first folder, or main/config at the top. */
function layerOf(path: string): string {
  const [first, ...rest] = path.split('/');
  if (rest.length > 0) return first!;
  const file = first!.replace(/\.js$/, '.ts'); // specifiers name the emitted .js
  return file === 'config.ts' ? 'config' : file === 'main.ts' ? 'main' : `unlayered:${file}`;
}

interface SourceText {
  /** Path relative to src/, with '/' separators. */
  readonly path: string;
  readonly text: string;
}

/** Every import that breaks the layering, as "file -> specifier (why)"; pure, so the check itself is tested. */
function layerViolations({ mayImport, ownedPackages }: Layering, files: readonly SourceText[]): string[] {
  return files.flatMap(({ path, text }) => {
    const from = layerOf(path);
    if (!(from in mayImport)) return [`${path} (not in a layer folder)`];
    const upward = referencedPaths(text).flatMap((specifier) => {
      const target = relative('/src', resolve('/src', dirname(path), specifier))
        .split(sep)
        .join('/');
      if (target.startsWith('..')) return []; // outside src/: boundaries.unit.test.ts judges those
      // A folder named by path (`new URL('../console/', …)`) is that folder's layer.
      const to = specifier.endsWith('/') ? target.split('/')[0]! : layerOf(target);
      return to === from || mayImport[from]!.includes(to) ? [] : [`${path} -> ${specifier} (${from} may not import ${to})`];
    });
    const packages = [...text.matchAll(/\bfrom\s*['"]([^'".][^'"]*)['"]/g)].map((m) => m[1]!);
    const foreign = packages
      .filter((name) => ownedPackages[name] !== undefined && ownedPackages[name] !== from)
      .map((name) => `${path} -> ${name} (only ${ownedPackages[name]} imports it)`);
    return [...upward, ...foreign];
  });
}

function sources(service: string): SourceText[] {
  const src = join(repoRoot, service, 'src');
  return sourceFiles(src).map((file) => ({ path: relative(src, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }));
}

describe.each(Object.keys(LAYERS) as Array<keyof typeof LAYERS>)('%s layers', (service) => {
  const layering = LAYERS[service];

  it('no folder imports a layer above it, and each package has its one owner', () => {
    expect(layerViolations(layering, sources(service))).toEqual([]);
  });

  it('every layer folder exists and says what it owns', () => {
    for (const layer of Object.keys(layering.mayImport).filter((l) => l !== 'main' && l !== 'config')) {
      expect(readFileSync(join(repoRoot, service, 'src', layer, 'README.md'), 'utf8')).toMatch(/may import/);
    }
  });
});

describe('the layer check', () => {
  it('catches an upward import, an unlayered file and a foreign package (the check is live)', () => {
    const violations = layerViolations(LAYERS.embedder, [
      { path: 'model/runner.ts', text: "import type { Batcher } from '../core/batcher.js';" },
      { path: 'core/engine.ts', text: "import { buildApp } from '../http/app.js';\nimport { x } from '../../../contract/x.js';" },
      { path: 'settlement/settlement.ts', text: "const m = await import('../telemetry/tracing.js');" },
      { path: 'core/batcher.ts', text: "import * as ort from 'onnxruntime-node';" },
      { path: 'helpers.ts', text: '' },
      {
        path: 'http/app.ts',
        text: "import { loadEngine } from '../core/engine.js';\nimport { noteOutcome } from '../telemetry/request-log.js';",
      },
      { path: 'main.ts', text: "import { buildApp } from './http/app.js';" },
    ]);
    expect(violations).toEqual([
      'model/runner.ts -> ../core/batcher.js (model may not import core)',
      'core/engine.ts -> ../http/app.js (core may not import http)',
      'settlement/settlement.ts -> ../telemetry/tracing.js (settlement may not import telemetry)',
      'core/batcher.ts -> onnxruntime-node (only model imports it)',
      'helpers.ts (not in a layer folder)',
    ]);
  });

  it("holds authz's policy pure and admin's operations free of the front ends", () => {
    const authz = layerViolations(LAYERS.authz, [
      { path: 'policy/access.ts', text: "import { RedisStore } from '../store/redis.js';" },
      { path: 'store/redis.ts', text: "import type { Logger } from '../telemetry/log.js';" },
      { path: 'edge/check.ts', text: "import { Redis } from 'ioredis';" },
      { path: 'admin/cli.ts', text: '' },
    ]);
    expect(authz).toEqual([
      'policy/access.ts -> ../store/redis.js (policy may not import store)',
      'store/redis.ts -> ../telemetry/log.js (store may not import telemetry)',
      'edge/check.ts -> ioredis (only store imports it)',
      'admin/cli.ts (not in a layer folder)',
    ]);
    const admin = layerViolations(LAYERS.admin, [
      { path: 'operations/keys.ts', text: "import { AdminHttpError } from '../http/problems.js';" },
      { path: 'store/audit.ts', text: "import { chain } from '../audit/chain.js';" },
      { path: 'cli/main.ts', text: "import Fastify from 'fastify';\nimport { openAdminDeps } from '../operations/deps.js';" },
      { path: 'operations/deps.ts', text: "import type { AdminConfig } from '../config.js';" },
    ]);
    expect(admin).toEqual([
      'operations/keys.ts -> ../http/problems.js (operations may not import http)',
      'store/audit.ts -> ../audit/chain.js (store may not import audit)',
      'cli/main.ts -> fastify (only http imports it)',
      'operations/deps.ts -> ../config.js (operations may not import config)',
    ]);
  });
});
