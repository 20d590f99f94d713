import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../authz/src/config.js';

const SECRET = 'x'.repeat(40);
// No Redis URL file: the defaults must not depend on whether `make up` ran on this machine.
const base = { KEY_HASH_SECRET: SECRET, GRANT_SECRET: `grant-${SECRET}`, MODEL_ID: 'm1', REDIS_URL_FILE: '/nonexistent/redis-url' };

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies the documented defaults and freezes the result', () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 9191,
      redisUrl: 'redis://127.0.0.1:6379',
      redisKeyPrefix: 'ctg:',
      redisTimeoutMs: 500,
      keyPrefix: 'CTG',
      modelId: 'm1',
      defaultRpm: 600,
      defaultTpm: 1_000_000,
      keyCacheTtlMs: 1000,
      drainMs: 1500,
      logLevel: 'info',
      grantTtlMs: 90_000,
    });
    expect(config.grantSecret.accepted).toEqual([`grant-${SECRET}`]);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reports every bad variable at once, each by name', () => {
    const problems = problemsOf({
      ...base,
      AUTHZ_PORT: '70000',
      REDIS_URL: 'http://x',
      REDIS_TIMEOUT_MS: 'soon',
      KEY_PREFIX: 'ctg_',
      DEFAULT_RPM: '-1',
      LOG_LEVEL: 'loud',
    });
    expect(problems).toHaveLength(6);
    for (const name of ['AUTHZ_PORT', 'REDIS_URL', 'REDIS_TIMEOUT_MS', 'KEY_PREFIX', 'DEFAULT_RPM', 'LOG_LEVEL']) {
      expect(problems.some((p) => p.startsWith(`${name}:`))).toBe(true);
    }
  });

  it('reads KEY_CACHE_TTL_MS (0 disables the cache) and names it when it is not a whole number of ms up to 60,000', () => {
    expect(loadConfig({ ...base, KEY_CACHE_TTL_MS: '0' }).keyCacheTtlMs).toBe(0);
    expect(loadConfig({ ...base, KEY_CACHE_TTL_MS: '250' }).keyCacheTtlMs).toBe(250);
    for (const bad of ['-1', '1.5', 'soon', '60001']) {
      expect(problemsOf({ ...base, KEY_CACHE_TTL_MS: bad })).toEqual([expect.stringMatching(/^KEY_CACHE_TTL_MS:/)]);
    }
  });

  it('reads the HMAC secret from KEY_HASH_SECRET_FILE, and names the variables when it is missing or short', () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-config-'));
    const file = join(dir, 'secret');
    writeFileSync(file, `${SECRET}\n`);
    expect(loadConfig({ ...base, KEY_HASH_SECRET: undefined, KEY_HASH_SECRET_FILE: file }).keyHashSecret).toBe(SECRET);
    expect(problemsOf({ ...base, KEY_HASH_SECRET: undefined, KEY_HASH_SECRET_FILE: join(dir, 'absent') })[0]).toMatch(
      /^KEY_HASH_SECRET \/ KEY_HASH_SECRET_FILE:/,
    );
    expect(problemsOf({ ...base, KEY_HASH_SECRET: 'short' })[0]).toMatch(/^KEY_HASH_SECRET:/);
  });

  it("carries none of admin's settings: its variables are not read, its fields not there", () => {
    const admin = { ADMIN_PORT: 'http', ADMIN_TOKEN_FILE: '/nonexistent/token', AUDIT_SECRET: 'short', OIDC_ISSUER: 'not a url' };
    expect(problemsOf({ ...base, ...admin })).toEqual([]);
    expect(Object.keys(loadConfig({ ...base, ...admin })).filter((field) => /admin|audit|oidc|session|bootstrap/i.test(field))).toEqual([]);
  });

  it('needs the grant secret it shares with the embedder', () => {
    expect(problemsOf({ ...base, GRANT_SECRET: undefined, GRANT_SECRET_FILE: '/nonexistent/grant-secret' })).toEqual([
      expect.stringMatching(/^GRANT_SECRET \/ GRANT_SECRET_FILE:/),
    ]);
    expect(problemsOf({ ...base, GRANT_SECRET: 'short' })).toEqual([
      expect.stringMatching(/^GRANT_SECRET: must hold a secret of at least 32/),
    ]);
    expect(problemsOf({ ...base, GRANT_TTL_MS: '10' })).toEqual([expect.stringMatching(/^GRANT_TTL_MS:/)]);
  });

  it('defaults REDIS_URL to the URL make up wrote (REDIS_URL_FILE), which REDIS_URL overrides', () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-redis-url-'));
    const file = join(dir, 'redis-url');
    writeFileSync(file, 'redis://127.0.0.1:6390\n');
    expect(loadConfig({ ...base, REDIS_URL_FILE: file }).redisUrl).toBe('redis://127.0.0.1:6390');
    expect(loadConfig({ ...base, REDIS_URL_FILE: file, REDIS_URL: 'redis://10.0.0.5:6379' }).redisUrl).toBe('redis://10.0.0.5:6379');
  });

  it('reads REDIS_SENTINELS and REDIS_SENTINEL_NAME, naming them when malformed', () => {
    expect(loadConfig(base)).toMatchObject({ redisSentinels: [], redisSentinelName: 'ctg' });
    expect(loadConfig({ ...base, REDIS_SENTINELS: '10.0.0.1:26379, s2:26380', REDIS_SENTINEL_NAME: 'main' })).toMatchObject({
      redisSentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      redisSentinelName: 'main',
    });
    expect(
      problemsOf({ ...base, REDIS_SENTINELS: '10.0.0.1', REDIS_SENTINEL_NAME: 'a b' })
        .map((p) => p.split(':')[0])
        .sort(),
    ).toEqual(['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME']);
  });

  it('reads REDIS_CLUSTER_NODES, refusing it malformed or beside REDIS_SENTINELS', () => {
    expect(loadConfig(base).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ ...base, REDIS_CLUSTER_NODES: '10.0.0.1:7000,r2:7001' }).redisClusterNodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'r2', port: 7001 },
    ]);
    expect(problemsOf({ ...base, REDIS_CLUSTER_NODES: '10.0.0.1' }).map((p) => p.split(':')[0])).toEqual(['REDIS_CLUSTER_NODES']);
    expect(problemsOf({ ...base, REDIS_CLUSTER_NODES: 'r1:7000', REDIS_SENTINELS: 's1:26379' }).map((p) => p.split(':')[0])).toEqual([
      'REDIS_CLUSTER_NODES',
    ]);
  });

  it("reads the Sentinels' password and the Redis CA from files; set but missing or malformed, it names the variable", () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-redis-auth-'));
    writeFileSync(join(dir, 'sentinel-password'), 's3cret-sentinel\n');
    writeFileSync(join(dir, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    writeFileSync(join(dir, 'not-a-ca'), 'hello');
    const unset = loadConfig({ ...base, REDIS_SENTINEL_PASSWORD_FILE: '', REDIS_TLS_CA_FILE: '' });
    expect(unset.redisSentinelPassword).toBeUndefined();
    expect(unset.redisTlsCa).toBeUndefined();
    const config = loadConfig({
      ...base,
      REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'sentinel-password'),
      REDIS_TLS_CA_FILE: join(dir, 'ca.crt'),
    });
    expect(config.redisSentinelPassword).toBe('s3cret-sentinel');
    expect(config.redisTlsCa).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(
      problemsOf({ ...base, REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'absent'), REDIS_TLS_CA_FILE: join(dir, 'not-a-ca') }).map(
        (p) => p.split(':')[0],
      ),
    ).toEqual(['REDIS_SENTINEL_PASSWORD_FILE', 'REDIS_TLS_CA_FILE']);
  });

  it('takes the served model from MODEL_DIR/manifest.json when MODEL_ID is unset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-model-'));
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ id: 'from-manifest' }));
    expect(loadConfig({ ...base, MODEL_ID: undefined, MODEL_DIR: dir }).modelId).toBe('from-manifest');
    expect(problemsOf({ ...base, MODEL_ID: undefined, MODEL_DIR: join(dir, 'none') })[0]).toMatch(/^MODEL_ID:/);
  });
});
