/** One config reader for every process: one wording, every bad variable at once, frozen results. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError as AuthzConfigError, loadConfig as loadAuthzConfig } from '../../authz/src/config.js';
import { ConfigError, EnvReader, readLogLevel, readOtlpEndpoint } from '../../contract/env.js';
import { DEFAULT_REDIS_URL, readRedisSettings } from '../../contract/redis-target.js';
import { settingDefault } from '../../contract/settings.js';
import { loadConfig as loadEmbedderConfig } from '../../embedder/src/config.js';
import { repoRoot } from '../support/stack.js';

function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('EnvReader', () => {
  it('reads each kind of value, trimmed, with its declared default when unset or blank', () => {
    const read = new EnvReader({
      AUTHZ_PORT: ' 42 ',
      AUTHZ_HOST: '  x ',
      EMBEDDER_HOST: '  ',
      ADMIN_TRUSTED_PROXIES: 'a, b,,c ',
      LOG_LEVEL: 'warn',
      GATEWAY_HOST_V6: ' ',
    });
    expect(read.integer('AUTHZ_PORT', 0, 100)).toBe(42);
    expect(read.integer('GATEWAY_PORT', 0, 100)).toBe(settingDefault('GATEWAY_PORT'));
    expect(read.optionalInteger('GATEWAY_PORT', 0)).toBeUndefined();
    expect(read.string('AUTHZ_HOST')).toBe('x');
    expect(read.string('EMBEDDER_HOST')).toBe(settingDefault('EMBEDDER_HOST'));
    expect(read.optional('EMBEDDER_HOST')).toBeUndefined();
    expect(read.blankable('GATEWAY_HOST_V6')).toBe('');
    expect(new EnvReader({}).blankable('GATEWAY_HOST_V6')).toBe(settingDefault('GATEWAY_HOST_V6'));
    expect(read.list('ADMIN_TRUSTED_PROXIES')).toEqual(['a', 'b', 'c']);
    expect(read.list('REDIS_SENTINELS')).toEqual([]);
    expect(read.oneOf('LOG_LEVEL', ['info', 'warn'])).toBe('warn');
    expect(read.problems).toEqual([]);
  });

  it('collects every bad variable, in one wording, and throws them together', () => {
    const read = new EnvReader({
      AUTHZ_PORT: '70000',
      GRANT_TTL_MS: '1.5',
      AUTHZ_CALLER_AUTH: 'loud',
      REDIS_KEY_PREFIX: 'http://x',
      LOG_LEVEL: 'chatty',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://x',
    });
    expect(read.integer('AUTHZ_PORT', 0, 65535)).toBe(settingDefault('AUTHZ_PORT'));
    read.integer('GRANT_TTL_MS', 0, 10);
    read.oneOf('AUTHZ_CALLER_AUTH', ['token', 'mesh']);
    read.matching('REDIS_KEY_PREFIX', /^redis:\/\//, 'a redis:// URL');
    readLogLevel(read);
    readOtlpEndpoint(read);
    expect(read.problems).toEqual([
      'AUTHZ_PORT: must be an integer from 0 to 65535, got "70000"',
      'GRANT_TTL_MS: must be an integer from 0 to 10, got "1.5"',
      'AUTHZ_CALLER_AUTH: must be one of token, mesh, got "loud"',
      'REDIS_KEY_PREFIX: must be a redis:// URL, got "http://x"',
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent, got "chatty"',
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s):// base URL (host and port, no path), got "ftp://x"',
    ]);
    expect(() => read.finish('svc', {})).toThrow(new ConfigError(read.problems, 'svc'));
    expect(() => read.finish('svc', {})).toThrow(/^invalid svc configuration:\n {2}AUTHZ_PORT: must/);
  });

  it('returns the config frozen when nothing is wrong', () => {
    const config = new EnvReader({}).finish('svc', { a: 1 });
    expect(config).toEqual({ a: 1 });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads the Redis target every process uses, with one default URL', () => {
    const none = { REDIS_URL_FILE: '/nonexistent/redis-url' };
    expect(DEFAULT_REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(readRedisSettings(new EnvReader(none))).toEqual({
      url: DEFAULT_REDIS_URL,
      sentinels: [],
      sentinelName: 'ctg',
      prefix: 'ctg:',
      timeoutMs: 500,
    });
    const read = new EnvReader({ ...none, REDIS_SENTINELS: 's1:26379,s2', REDIS_URL: 'http://x' });
    readRedisSettings(read);
    expect(read.problems.map((p) => p.split(':')[0])).toEqual(['REDIS_SENTINELS', 'REDIS_URL']);
  });

  it('the shell scripts, which cannot import it, default to the same URL', () => {
    for (const script of ['scripts/stack/common.sh', '.ci/run']) {
      const defaults = [...readFileSync(join(repoRoot, script), 'utf8').matchAll(/\$\{REDIS_URL:-([^}]+)\}/g)].map((m) => m[1]);
      expect(defaults.length, script).toBeGreaterThan(0);
      expect(new Set(defaults), script).toEqual(new Set([DEFAULT_REDIS_URL]));
    }
  });
});

describe('both services word their settings errors alike', () => {
  it('authz and the embedder name a bad port the same way, through the one ConfigError', () => {
    const grant = { GRANT_SECRET: 'g'.repeat(40), REDIS_URL_FILE: '/nonexistent/redis-url' };
    const authz = problemsOf(() => loadAuthzConfig({ ...grant, KEY_HASH_SECRET: 'x'.repeat(40), MODEL_ID: 'm', AUTHZ_PORT: 'x' }));
    const embedder = problemsOf(() => loadEmbedderConfig({ ...grant, EMBEDDER_PORT: 'x' }));
    expect(authz).toEqual(['AUTHZ_PORT: must be an integer from 0 to 65535, got "x"']);
    expect(embedder).toEqual(['EMBEDDER_PORT: must be an integer from 0 to 65535, got "x"']);
    expect(AuthzConfigError).toBe(ConfigError);
  });
});
