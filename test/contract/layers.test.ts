/**
 * embedder/src shows its layers in its folders, and the imports keep to them: main.ts (the
 * composition root) wires everything; http/ is the edge; telemetry/ observes core/ and
 * settlement/ from outside (it wraps them, they never call it); core/ batches work onto model/;
 * settlement/ and model/ import no other layer; batch/ (files, queue, workers) sits between http/ and
 * core/. config.ts is the parsed settings, a leaf any
 * layer may read. A new top-level file or folder fails here until it is given a layer.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { referencedPaths, sourceFiles } from '../support/references.js';
import { repoRoot } from '../support/stack.js';

const SRC = join(repoRoot, 'embedder', 'src');

/** Each layer and the layers it may import (besides itself and anything outside embedder/src). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
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
};

/** The packages only one layer may import: one module owns each outside thing. */
const OWNED_PACKAGES: Readonly<Record<string, string>> = {
  'onnxruntime-node': 'model',
  '@huggingface/tokenizers': 'model',
  'prom-client': 'telemetry',
  ioredis: 'settlement',
  pg: 'batch',
  '@fastify/busboy': 'http',
  '@opentelemetry/sdk-trace-node': 'telemetry',
  '@opentelemetry/exporter-trace-otlp-proto': 'telemetry',
  '@opentelemetry/resources': 'telemetry',
};

/** The layer of a path relative to embedder/src: its first folder, or main/config at the top. */
function layerOf(path: string): string {
  const [first, ...rest] = path.split('/');
  if (rest.length > 0) return first!;
  const file = first!.replace(/\.js$/, '.ts'); // specifiers name the emitted .js
  return file === 'config.ts' ? 'config' : file === 'main.ts' ? 'main' : `unlayered:${file}`;
}

interface SourceText {
  /** Path relative to embedder/src, with '/' separators. */
  readonly path: string;
  readonly text: string;
}

/** Every import that breaks the layering, as "file -> specifier (why)"; pure, so the check itself is tested. */
function layerViolations(files: readonly SourceText[]): string[] {
  return files.flatMap(({ path, text }) => {
    const from = layerOf(path);
    if (!(from in MAY_IMPORT)) return [`${path} (not in a layer folder)`];
    const upward = referencedPaths(text).flatMap((specifier) => {
      const target = relative('/src', resolve('/src', dirname(path), specifier))
        .split(sep)
        .join('/');
      if (target.startsWith('..')) return []; // outside embedder/src: boundaries.test.ts judges those
      const to = layerOf(target);
      return to === from || MAY_IMPORT[from]!.includes(to) ? [] : [`${path} -> ${specifier} (${from} may not import ${to})`];
    });
    const packages = [...text.matchAll(/\bfrom\s*['"]([^'".][^'"]*)['"]/g)].map((m) => m[1]!);
    const foreign = packages
      .filter((name) => OWNED_PACKAGES[name] !== undefined && OWNED_PACKAGES[name] !== from)
      .map((name) => `${path} -> ${name} (only ${OWNED_PACKAGES[name]} imports it)`);
    return [...upward, ...foreign];
  });
}

function embedderSources(): SourceText[] {
  return sourceFiles(SRC).map((file) => ({ path: relative(SRC, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }));
}

describe('embedder layers', () => {
  it('no folder imports a layer above it, and each package has its one owner', () => {
    expect(layerViolations(embedderSources())).toEqual([]);
  });

  it('every layer folder exists and says what it owns', () => {
    for (const layer of Object.keys(MAY_IMPORT).filter((l) => l !== 'main' && l !== 'config')) {
      expect(readFileSync(join(SRC, layer, 'README.md'), 'utf8')).toMatch(/may import/);
    }
  });

  it('catches an upward import, an unlayered file and a foreign package (the check is live)', () => {
    const violations = layerViolations([
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
});
