/**
 * Only config.ts reads the environment: in each service, the one file whose code names
 * `process.env` is its `src/config.ts` (the READMEs and the config modules say so). The one
 * exception is the embedder's `model/ort-telemetry.ts`, which reads no setting: it sets
 * ORT_DISABLE_TELEMETRY for ONNX Runtime's native code. Libraries read their own variables
 * (OpenTelemetry's OTEL_*, grpc-js's GRPC_*), which are not the gateway's settings.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../contract/repo-root.js';
import { sourceFiles } from '../support/references.js';

const WRITES_ONLY = ['embedder/src/model/ort-telemetry.ts'];

/** `text` without its comments (a comment may name process.env to explain why it is not read). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('who reads the environment', () => {
  it.each(['authz', 'embedder', 'admin'])('%s: only src/config.ts', (service) => {
    const readers = sourceFiles(join(repoRoot, service, 'src'))
      .filter((file) => /\bprocess\.env\b/.test(code(readFileSync(file, 'utf8'))))
      .map((file) => relative(repoRoot, file))
      .filter((file) => !WRITES_ONLY.includes(file));
    expect(readers).toEqual([`${service}/src/config.ts`]);
  });

  it('the check sees a reader, and not a comment', () => {
    expect(code('const a = process.env.X; // process.env')).toMatch(/process\.env/);
    expect(code('/** reads process.env */\nconst url = "http://x"; // process.env')).not.toMatch(/process\.env/);
  });
});
