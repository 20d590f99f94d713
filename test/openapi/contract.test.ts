import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openapiDocument } from '../../openapi/document.js';
import { catalogue, problem } from '../../openapi/problems.js';

describe('OpenAPI contract', () => {
  it('generated types are fresh (run `npm run generate:types` after editing openapi.yaml)', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'openapi-')), 'schema.d.ts');
    execFileSync('npx', ['openapi-typescript', 'openapi/openapi.yaml', '-o', out], { stdio: 'pipe' });
    expect(readFileSync(out, 'utf8')).toBe(readFileSync('openapi/generated/schema.d.ts', 'utf8'));
  });

  it('the problem catalogue lists exactly the codes of the ProblemCode enum', () => {
    const enumCodes = openapiDocument.components.schemas.ProblemCode.enum as string[];
    expect([...catalogue.keys()].sort()).toEqual([...enumCodes].sort());
  });

  it('every code the spec fixes has the spec status', () => {
    const fixed: Record<string, number> = {
      invalid_body: 400, invalid_request: 400, model_not_enabled: 403, not_found: 404,
      method_not_allowed: 405, payload_too_large: 413,
    };
    for (const [code, status] of Object.entries(fixed)) {
      expect(catalogue.get(code as never)?.status).toBe(status);
    }
    for (const [code, entry] of catalogue) {
      if (code.endsWith('_api_key')) expect(entry.status).toBe(401);
    }
  });

  it('problem() builds the RFC 9457 body and refuses unknown codes', () => {
    expect(problem('not_found', 'no route for /x')).toEqual({
      type: 'about:blank', status: 404, title: 'Not found', code: 'not_found', detail: 'no route for /x',
      error: { message: 'no route for /x', type: 'invalid_request_error', param: null, code: 'not_found' },
    });
    expect(problem('overloaded').error).toEqual({
      message: 'Service overloaded', type: 'server_error', param: null, code: 'overloaded',
    });
    expect(() => problem('nope' as never)).toThrow(/not in the catalogue/);
  });
});
