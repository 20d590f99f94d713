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
      invalid_body: 400,
      invalid_request: 400,
      model_not_enabled: 403,
      not_found: 404,
      method_not_allowed: 405,
      payload_too_large: 413,
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
      type: 'about:blank',
      status: 404,
      title: 'Not found',
      code: 'not_found',
      detail: 'no route for /x',
      error: { message: 'no route for /x', type: 'not_found_error', param: null, code: 'not_found' },
    });
    expect(problem('overloaded').error).toEqual({
      message: 'Service overloaded',
      type: 'server_error',
      param: null,
      code: 'overloaded',
    });
    expect(() => problem('nope' as never)).toThrow(/not in the catalogue/);
  });

  it('error.type per status: what OpenAI uses, so litellm does not file 401/403/404 as BadRequestError', () => {
    const byCode = Object.fromEntries([...catalogue.keys()].map((code) => [code, problem(code).error.type]));
    expect(byCode).toEqual({
      invalid_body: 'invalid_request_error',
      invalid_request: 'invalid_request_error',
      missing_api_key: 'authentication_error',
      malformed_api_key: 'authentication_error',
      invalid_api_key: 'authentication_error',
      revoked_api_key: 'authentication_error',
      expired_api_key: 'authentication_error',
      endpoint_not_enabled: 'permission_error',
      model_not_enabled: 'permission_error',
      not_found: 'not_found_error',
      method_not_allowed: 'invalid_request_error',
      payload_too_large: 'invalid_request_error',
      rate_limit_exceeded: 'rate_limit_error',
      internal_error: 'server_error',
      overloaded: 'server_error',
      model_not_ready: 'server_error',
      upstream_unavailable: 'server_error',
      authorization_unavailable: 'server_error',
    });
    // litellm files any body containing "invalid_request_error" as BadRequestError, whatever the status.
    for (const code of catalogue.keys()) {
      if (catalogue.get(code)!.status !== 400 && !['method_not_allowed', 'payload_too_large'].includes(code)) {
        expect(JSON.stringify(problem(code, 'x'))).not.toContain('invalid_request_error');
      }
    }
    const documented = openapiDocument.components.schemas.Problem.properties.error.properties.type.enum as string[];
    expect([...new Set(Object.values(byCode))].sort()).toEqual([...documented].sort());
  });

  it('error.param is the field an invalid_body names, and null for every other code', () => {
    expect(problem('invalid_body', 'input[3]: must not be empty').error.param).toBe('input[3]');
    expect(problem('invalid_body', 'truncate_prompt_tokens: must be -1 or at least 2').error.param).toBe('truncate_prompt_tokens');
    expect(problem('invalid_body', 'content-type: must contain json').error.param).toBe('content-type');
    expect(problem('invalid_body', 'x-request-id: must be at most 200 characters').error.param).toBe('x-request-id');
    expect(problem('invalid_body', 'body: must be valid JSON').error.param).toBe('body');
    expect(problem('invalid_body', 'The HTTP request could not be read.').error.param).toBeNull();
    expect(problem('invalid_body').error.param).toBeNull();
    expect(problem('invalid_request', 'dimensions: not supported').error.param).toBeNull();
    expect(problem('model_not_enabled', 'model: not served here').error.param).toBeNull();
  });
});
