/**
 * The admin OpenAPI document is the admin API's contract: its generated types are fresh, its
 * problem table matches its enum and agrees with the public catalogue on shared codes, and the
 * server routes exactly its operations.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminCatalogue, adminDocument, adminProblem } from '../../openapi/admin-document.js';
import { catalogue } from '../../openapi/problems.js';
import { documentedOperations } from '../../admin/src/http/routes.js';

describe('admin OpenAPI contract', () => {
  it('generated types are fresh (npx openapi-typescript openapi/admin.yaml -o openapi/generated/admin-schema.d.ts)', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'openapi-admin-')), 'admin-schema.d.ts');
    execFileSync('npx', ['openapi-typescript', 'openapi/admin.yaml', '-o', out], { stdio: 'pipe' });
    expect(readFileSync(out, 'utf8')).toBe(readFileSync('openapi/generated/admin-schema.d.ts', 'utf8'));
  });

  it('the problem table lists exactly the AdminProblemCode enum, and shared codes match the public table', () => {
    const codes = adminDocument.components.schemas.AdminProblemCode.enum as string[];
    expect([...adminCatalogue.keys()].sort()).toEqual([...codes].sort());
    for (const [code, entry] of adminCatalogue) {
      const shared = catalogue.get(code as never);
      if (shared) expect(entry).toEqual(shared);
    }
  });

  it('builds the same problem shape as the public API', () => {
    expect(adminProblem('csrf_rejected', 'x-csrf-token: missing')).toEqual({
      type: 'about:blank',
      status: 403,
      title: 'Cross-site request refused',
      code: 'csrf_rejected',
      detail: 'x-csrf-token: missing',
      error: { message: 'x-csrf-token: missing', type: 'invalid_request_error', param: null, code: 'csrf_rejected' },
    });
    expect(() => adminProblem('nope' as never)).toThrow(/not in the admin catalogue/);
  });

  it('every operation has an operationId, and only signing in and the audit public key are unauthenticated', () => {
    const operations = documentedOperations(adminDocument);
    expect(operations.every((op) => /^[a-z][A-Za-z]+$/.test(op.operationId))).toBe(true);
    expect(
      operations
        .filter((op) => !op.authenticated)
        .map((op) => op.operationId)
        .sort(),
    ).toEqual(['createSession', 'finishOidc', 'getAuditPublicKey', 'signInOptions', 'startOidc']);
  });

  it('every change needs at least an operator, administrators need an owner, reads need a viewer', () => {
    const roles = Object.fromEntries(
      documentedOperations(adminDocument)
        .filter((op) => op.authenticated)
        .map((op) => [op.operationId, op.role]),
    );
    for (const [id, role] of Object.entries(roles)) {
      if (/Admin/.test(id)) expect(role, id).toBe('owner');
      else if (/^(create|update|revoke|rotate|set|delete|disable|enable)/.test(id) && id !== 'deleteSession')
        expect(role, id).toBe('operator');
      else expect(role, id).toBe('viewer');
    }
  });
});
