/**
 * The admin server's configuration: fails closed without an admin token, reports every bad
 * variable at once by name, and defaults to loopback.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAdminConfig } from '../../authz/src/admin/config.js';
import { ConfigError } from '../../authz/src/config.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';

const dir = mkdtempSync(join(tmpdir(), 'admin-config-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, `${'t'.repeat(40)}\n`);
const shortFile = join(dir, 'short');
writeFileSync(shortFile, 'too-short');
const base = { KEY_HASH_SECRET: TEST_SECRET, MODEL_ID: TEST_MODEL, ADMIN_TOKEN_FILE: tokenFile };

function problems(env: Record<string, string>): string[] {
  try {
    loadAdminConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('loadAdminConfig', () => {
  it('defaults to loopback:9443, reads and trims the token, and freezes the result', () => {
    const config = loadAdminConfig(base);
    expect(config).toMatchObject({ adminHost: '127.0.0.1', adminPort: 9443, adminToken: 't'.repeat(40), adminActorHeader: null, adminSessionTtlMs: 28_800_000, modelId: TEST_MODEL });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses to start without a token file, or with a short token', () => {
    expect(problems({ ...base, ADMIN_TOKEN_FILE: join(dir, 'missing') })).toEqual([expect.stringMatching(/^ADMIN_TOKEN_FILE: .*does not exist/)]);
    expect(problems({ ...base, ADMIN_TOKEN_FILE: shortFile })).toEqual([expect.stringMatching(/^ADMIN_TOKEN_FILE .*at least 32 characters/)]);
  });

  it('reports every bad variable together, authz\'s own included', () => {
    const found = problems({ ...base, ADMIN_PORT: 'http', ADMIN_ACTOR_HEADER: 'X Bad', ADMIN_SESSION_TTL_S: '5', DEFAULT_RPM: '-1' });
    expect(found.map((p) => p.split(':', 1)[0])).toEqual(['DEFAULT_RPM', 'ADMIN_PORT', 'ADMIN_ACTOR_HEADER', 'ADMIN_SESSION_TTL_S']);
  });
});
