/**
 * The admin server's configuration: a bootstrap token only when ADMIN_TOKEN_FILE is given (and
 * long enough), the audit secret required when named, trusted proxies and OpenID Connect
 * settings checked, every bad variable reported at once by name, loopback by default.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadAdminConfig, loadCliConfig } from '../../admin/src/config.js';
import { TEST_MODEL, TEST_SECRET } from '../support/grpc-authz.js';

const dir = mkdtempSync(join(tmpdir(), 'admin-config-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, `${'t'.repeat(40)}\n`);
const shortFile = join(dir, 'short');
writeFileSync(shortFile, 'too-short');
const AUDIT_SECRET = 'a'.repeat(40);
const base = { KEY_HASH_SECRET: TEST_SECRET, MODEL_ID: TEST_MODEL, AUDIT_SECRET, AUDIT_ANCHOR_FILE: join(dir, 'anchor.jsonl') };

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
  it('defaults to loopback:9443 with no bootstrap token and no OpenID Connect, and freezes the result', () => {
    const config = loadAdminConfig(base);
    expect(config).toMatchObject({
      adminHost: '127.0.0.1',
      adminPort: 9443,
      bootstrapToken: null,
      bootstrapName: 'local-owner',
      adminSessionTtlMs: 28_800_000,
      adminSessionMaxMs: 43_200_000,
      trustedProxies: [],
      oidc: null,
      auditSecret: AUDIT_SECRET,
      auditAnchorFile: join(dir, 'anchor.jsonl'),
      modelId: TEST_MODEL,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads and trims a bootstrap token; refuses a missing file or a short token', () => {
    expect(loadAdminConfig({ ...base, ADMIN_TOKEN_FILE: tokenFile }).bootstrapToken).toBe('t'.repeat(40));
    expect(problems({ ...base, ADMIN_TOKEN_FILE: join(dir, 'missing') })).toEqual([
      expect.stringMatching(/^ADMIN_TOKEN_FILE: .*does not exist/),
    ]);
    expect(problems({ ...base, ADMIN_TOKEN_FILE: shortFile })).toEqual([
      expect.stringMatching(/^ADMIN_TOKEN_FILE .*at least 32 characters/),
    ]);
  });

  it('requires a named audit secret file to exist, and any audit secret to be long enough', () => {
    const { AUDIT_SECRET: _, ...noSecret } = base;
    expect(problems({ ...noSecret, AUDIT_SECRET_FILE: join(dir, 'missing') })).toEqual([
      expect.stringMatching(/^AUDIT_SECRET_FILE: .*does not exist/),
    ]);
    expect(problems({ ...base, AUDIT_SECRET: 'short' })).toEqual([expect.stringMatching(/^AUDIT_SECRET: .*at least 32/)]);
  });

  it('parses trusted proxies and OpenID Connect settings', () => {
    const config = loadAdminConfig({
      ...base,
      ADMIN_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7,::1',
      OIDC_ISSUER: 'https://idp.example.org',
      OIDC_CLIENT_ID: 'console',
      OIDC_CLIENT_SECRET: 's3cret',
      ADMIN_PUBLIC_URL: 'https://admin.example.org/',
    });
    expect(config.trustedProxies).toEqual(['10.0.0.0/8', '192.168.1.7', '::1']);
    expect(config.oidc).toEqual({
      issuer: 'https://idp.example.org',
      clientId: 'console',
      clientSecret: 's3cret',
      publicUrl: 'https://admin.example.org',
    });
  });

  it('reports every bad variable together, the access settings it shares with authz included', () => {
    const found = problems({
      ...base,
      ADMIN_PORT: 'http',
      ADMIN_SESSION_TTL_S: '5',
      ADMIN_SESSION_MAX_S: '12h',
      DEFAULT_RPM: '-1',
      ADMIN_ACTOR_HEADER: 'x-user',
      ADMIN_TRUSTED_PROXIES: '10.0.0.0/40,proxy.local',
      OIDC_ISSUER: 'https://idp.example.org',
      ADMIN_BOOTSTRAP_NAME: 'no spaces',
    });
    expect(found.map((p) => p.split(/[: ]/, 1)[0])).toEqual([
      'DEFAULT_RPM',
      'ADMIN_PORT',
      'ADMIN_SESSION_TTL_S',
      'ADMIN_SESSION_MAX_S',
      'ADMIN_BOOTSTRAP_NAME',
      'ADMIN_ACTOR_HEADER',
      'ADMIN_TRUSTED_PROXIES',
      'ADMIN_TRUSTED_PROXIES',
      'OIDC_CLIENT_ID',
      'OIDC_CLIENT_SECRET',
      'ADMIN_PUBLIC_URL',
    ]);
  });

  it("reads none of authz's own settings: no grant secret, no caller token, no authz listener", () => {
    const authzOnly = {
      GRANT_SECRET_FILE: join(dir, 'missing'),
      AUTHZ_CALLER_TOKEN_FILE: join(dir, 'missing'),
      AUTHZ_PORT: 'http',
      KEY_CACHE_TTL_MS: '-1',
    };
    expect(problems({ ...base, ...authzOnly })).toEqual([]);
    expect(Object.keys(loadAdminConfig(base))).not.toContain('grantSecret');
    const cli = loadCliConfig({ ...base, ...authzOnly, DEFAULT_TPM: '5' });
    expect(cli).toMatchObject({
      keyPrefix: 'CTG',
      keyHashSecret: TEST_SECRET,
      modelId: TEST_MODEL,
      defaultTpm: 5,
      auditSecret: AUDIT_SECRET,
    });
    expect(Object.keys(cli)).not.toContain('adminPort');
  });
});

describe('loadCliConfig: the token the CLI acts with', () => {
  it('reads ADMIN_TOKEN, else the file ADMIN_TOKEN_FILE (which must exist); the server reads neither as its own identity', () => {
    expect(loadCliConfig({ ...base, ADMIN_TOKEN: 'ctga_abc_def' }).cliToken).toEqual({ token: 'ctga_abc_def', from: 'ADMIN_TOKEN' });
    expect(loadCliConfig({ ...base, ADMIN_TOKEN_FILE: tokenFile }).cliToken).toEqual({ token: 't'.repeat(40), from: 'ADMIN_TOKEN_FILE' });
    expect(() => loadCliConfig({ ...base, ADMIN_TOKEN_FILE: join(dir, 'missing') })).toThrow(/ADMIN_TOKEN_FILE: .*does not exist/);
    expect(Object.keys(loadAdminConfig({ ...base, ADMIN_TOKEN: 'x' }))).not.toContain('cliToken');
  });
});
