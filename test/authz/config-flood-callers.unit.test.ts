/** The settings of the key cache's bounds and of authz's callers' secrets (config.ts). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../authz/src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'authz-config-'));
// No Redis URL file: the defaults must not depend on whether `make up` ran here.
const base = {
  KEY_HASH_SECRET: 'x'.repeat(40),
  GRANT_SECRET: 'g'.repeat(40),
  MODEL_ID: 'm1',
  REDIS_URL_FILE: '/nonexistent/redis-url',
  AUTHZ_CALLER_TOKEN_FILE: '',
  METRICS_TOKEN_FILE: '',
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('loadConfig: key cache bounds', () => {
  it('defaults to 10,000 keys, 50,000 unknown ids and 32 unknown lookups in flight, and reads overrides', () => {
    expect(loadConfig(base)).toMatchObject({ keyCacheMaxKeys: 10_000, keyCacheMaxUnknown: 50_000, keyLookupsMaxInFlight: 32 });
    expect(loadConfig({ ...base, KEY_CACHE_MAX_KEYS: '5', KEY_CACHE_MAX_UNKNOWN: '0', KEY_LOOKUPS_MAX_IN_FLIGHT: '1' })).toMatchObject({
      keyCacheMaxKeys: 5,
      keyCacheMaxUnknown: 0,
      keyLookupsMaxInFlight: 1,
    });
  });

  it('names each bad bound', () => {
    const problems = problemsOf({ ...base, KEY_CACHE_MAX_KEYS: '0', KEY_CACHE_MAX_UNKNOWN: '-1', KEY_LOOKUPS_MAX_IN_FLIGHT: 'many' });
    expect(problems.map((p) => p.split(':')[0])).toEqual(['KEY_CACHE_MAX_KEYS', 'KEY_CACHE_MAX_UNKNOWN', 'KEY_LOOKUPS_MAX_IN_FLIGHT']);
  });
});

describe('loadConfig: caller and metrics tokens', () => {
  const token = 't'.repeat(40);

  it('reads each token directly or from its file, and asks for the token by default', () => {
    const file = join(dir, 'caller');
    writeFileSync(file, `${token}\n`);
    const config = loadConfig({ ...base, AUTHZ_CALLER_TOKEN_FILE: file, METRICS_TOKEN: `m${token}` });
    expect([config.callerToken?.accepted, config.metricsToken?.accepted]).toEqual([[token], [`m${token}`]]);
    // Rotation: one value per line, the first one Envoy sends, every one accepted; the file is watched.
    writeFileSync(file, `${token}\n${token}2\n`);
    const rotating = loadConfig({ ...base, AUTHZ_CALLER_TOKEN_FILE: file });
    expect([rotating.callerToken?.current, rotating.callerToken?.accepted, rotating.callerToken?.file]).toEqual([
      token,
      [token, `${token}2`],
      file,
    ]);
    expect(loadConfig(base).callerAuth).toBe('token');
  });

  it('names a token file that does not exist, a short token, or one with spaces', () => {
    expect(problemsOf({ ...base, AUTHZ_CALLER_TOKEN_FILE: join(dir, 'absent') })).toEqual([
      expect.stringMatching(/^AUTHZ_CALLER_TOKEN_FILE:/),
    ]);
    expect(problemsOf({ ...base, METRICS_TOKEN: 'short' })).toEqual([expect.stringMatching(/^METRICS_TOKEN /)]);
    expect(problemsOf({ ...base, AUTHZ_CALLER_TOKEN: `${token} ${token}` })).toEqual([expect.stringMatching(/^AUTHZ_CALLER_TOKEN /)]);
  });

  it('AUTHZ_CALLER_AUTH is token (default) or mesh', () => {
    expect(loadConfig({ ...base, AUTHZ_CALLER_AUTH: 'mesh' }).callerAuth).toBe('mesh');
    expect(problemsOf({ ...base, AUTHZ_CALLER_AUTH: 'none' })).toEqual([expect.stringMatching(/^AUTHZ_CALLER_AUTH:/)]);
  });
});
