/**
 * admin's configuration: the one module of admin that reads `process.env` (checked by
 * test/contract/env-readers.unit.test.ts). The CLI needs Redis,
 * the access settings it shares with authz (contract/access-settings.ts: key prefix, key-hash
 * secret, model, default limits) and the audit trail's; the admin server adds its listener,
 * sessions, OpenID Connect, logging and metrics. Every bad variable is reported together, by
 * name, and the result is frozen.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { repoRoot } from '../../contract/repo-root.js';
import { readAccessSettings } from '../../contract/access-settings.js';
import { EnvReader, readLogLevel, type Env, type LogLevel } from '../../contract/env.js';
import { readRedisSettings } from '../../contract/redis-target.js';
import { readTokenValues, type SecretValues } from '../../contract/secrets.js';
import type { OpenConfig } from './operations/deps.js';
import { adminName } from './operations/rules.js';

export { ConfigError } from '../../contract/env.js';

/** The administrator token the CLI acts with, and where it came from. */
export interface CliToken {
  readonly token: string;
  readonly from: 'ADMIN_TOKEN' | 'ADMIN_TOKEN_FILE' | '.local/admin-token';
}

/** What the CLI needs: what operations/deps.ts opens (Redis, the shared access settings, the audit trail's), and its token. */
export interface CliConfig extends OpenConfig {
  readonly cliToken: CliToken | null;
}

/** Sign-in through an OpenID Connect provider (authorization code flow with PKCE). */
export interface OidcSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The console's public origin; the provider redirects to `<publicUrl>/api/oidc/callback`. */
  readonly publicUrl: string;
}

export interface AdminConfig extends OpenConfig {
  readonly adminHost: string;
  readonly adminPort: number;
  /**
   * ADMIN_TOKEN_FILE: when set, the token in it is registered at start-up as a token of the
   * owner ADMIN_BOOTSTRAP_NAME (how `make console` signs in locally); null otherwise.
   */
  readonly bootstrapToken: string | null;
  readonly bootstrapName: string;
  /** How long a console session lasts without use. */
  readonly adminSessionTtlMs: number;
  /** How long a console session lasts at most, used or not (ADMIN_SESSION_MAX_S). */
  readonly adminSessionMaxMs: number;
  /** Addresses or CIDR ranges whose X-Forwarded-For is believed (ADMIN_TRUSTED_PROXIES). */
  readonly trustedProxies: readonly string[];
  readonly oidc: OidcSettings | null;
  /** The console's public origin (ADMIN_PUBLIC_URL), or null; with https: every cookie is `Secure`. */
  readonly publicUrl: string | null;
  readonly logLevel: LogLevel;
  /** The bearer token GET /metrics requires (METRICS_TOKEN[_FILE]); without one, /metrics answers nobody. */
  readonly metricsToken: SecretValues | undefined;
}

const MIN_SECRET_LENGTH = 32;
const MIN_TOKEN_LENGTH = 32;
const DEFAULT_SECRET_FILE = '.local/audit-secret';
const fromRepo = (path: string): string => (isAbsolute(path) ? path : resolve(repoRoot, path));

// Redis, the access settings and the audit trail: what both the CLI and the server read.
function readOpen(read: EnvReader, env: Env): OpenConfig {
  const redis = readRedisSettings(read);
  const access = readAccessSettings(read, repoRoot);
  return {
    redisUrl: redis.url,
    redisSentinels: redis.sentinels,
    ...(redis.clusterNodes ? { redisClusterNodes: redis.clusterNodes } : {}),
    redisSentinelName: redis.sentinelName,
    ...(redis.sentinelPassword !== undefined ? { redisSentinelPassword: redis.sentinelPassword } : {}),
    ...(redis.tlsCa !== undefined ? { redisTlsCa: redis.tlsCa } : {}),
    redisKeyPrefix: redis.prefix,
    redisTimeoutMs: redis.timeoutMs,
    ...access,
    ...readAuditSettings(env, read.problems),
  };
}

/**
 * The folder the CLI was started from: npm runs scripts in the package's folder and says where
 * it was invoked in INIT_CWD, so a path on `npm run admin`'s command line means what it says.
 */
export function invocationDir(env: Env = process.env): string {
  return env.INIT_CWD || process.cwd();
}

/** Parses what the CLI needs from `env`. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const read = new EnvReader(env);
  return read.finish('admin', { ...readOpen(read, env), cliToken: readCliToken(env, read.problems) });
}

/**
 * The token the CLI acts with: ADMIN_TOKEN, else the file ADMIN_TOKEN_FILE, else locally
 * `.local/admin-token` (the owner token `make console` registers) when it exists.
 */
function readCliToken(env: Env, problems: string[]): CliToken | null {
  if (env.ADMIN_TOKEN) return { token: env.ADMIN_TOKEN.trim(), from: 'ADMIN_TOKEN' };
  if (env.ADMIN_TOKEN_FILE) {
    const file = fromRepo(env.ADMIN_TOKEN_FILE);
    if (existsSync(file)) return { token: readFileSync(file, 'utf8').trim(), from: 'ADMIN_TOKEN_FILE' };
    problems.push(`ADMIN_TOKEN_FILE: ${file} does not exist (it holds your administrator token)`);
    return null;
  }
  const local = fromRepo('.local/admin-token');
  return existsSync(local) ? { token: readFileSync(local, 'utf8').trim(), from: '.local/admin-token' } : null;
}

/** Parses the settings the CLI opens plus the admin listener's from `env`. */
export function loadAdminConfig(env: Env = process.env): AdminConfig {
  const read = new EnvReader(env);
  const cli = readOpen(read, env);
  const logLevel = readLogLevel(read);
  const metricsToken = readTokenValues(read, 'METRICS_TOKEN', '.local/metrics-token', repoRoot);
  const problems = read.problems;
  const port = env.ADMIN_PORT || '9443';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535)
    problems.push(`ADMIN_PORT: must be an integer from 0 to 65535, got ${JSON.stringify(port)}`);
  const ttl = env.ADMIN_SESSION_TTL_S || '28800';
  if (!/^\d{1,6}$/.test(ttl) || Number(ttl) < 60)
    problems.push(`ADMIN_SESSION_TTL_S: must be an integer from 60 to 999999, got ${JSON.stringify(ttl)}`);
  const max = env.ADMIN_SESSION_MAX_S || '43200';
  if (!/^\d{1,7}$/.test(max) || Number(max) < 60)
    problems.push(`ADMIN_SESSION_MAX_S: must be an integer from 60 to 9999999, got ${JSON.stringify(max)}`);
  const bootstrapName = env.ADMIN_BOOTSTRAP_NAME || 'local-owner';
  try {
    adminName(bootstrapName);
  } catch {
    problems.push(
      `ADMIN_BOOTSTRAP_NAME: must be an administrator name (1-100 of A-Z a-z 0-9 . _ @ + -), got ${JSON.stringify(bootstrapName)}`,
    );
  }
  if (env.ADMIN_ACTOR_HEADER)
    problems.push(
      'ADMIN_ACTOR_HEADER: no longer read; administrators sign in with their own token or through OpenID Connect (OIDC_ISSUER)',
    );
  return read.finish('admin', {
    ...cli,
    adminHost: env.ADMIN_HOST || '127.0.0.1',
    adminPort: Number(port),
    adminSessionTtlMs: Number(ttl) * 1000,
    adminSessionMaxMs: Number(max) * 1000,
    bootstrapToken: readBootstrapToken(env, problems),
    bootstrapName,
    trustedProxies: readProxies(env, problems),
    oidc: readOidc(env, problems),
    publicUrl: readPublicUrl(env, problems),
    logLevel,
    metricsToken,
  });
}

/**
 * Parses the audit settings, adding each problem to `problems`. Locally (neither variable set)
 * the secret file `make up` creates is used, and created here when missing, as `make up` would:
 * a lost secret cannot silently pass, since every record then fails verification.
 */
function readAuditSettings(env: Env, problems: string[]): Pick<OpenConfig, 'auditSecret' | 'auditAnchorFile'> {
  const auditAnchorFile = fromRepo(env.AUDIT_ANCHOR_FILE || '.local/audit-anchor.jsonl');
  const direct = env.AUDIT_SECRET;
  if (direct) {
    if (direct.length < MIN_SECRET_LENGTH) problems.push(`AUDIT_SECRET: must be at least ${MIN_SECRET_LENGTH} characters`);
    return { auditSecret: direct, auditAnchorFile };
  }
  const file = fromRepo(env.AUDIT_SECRET_FILE || DEFAULT_SECRET_FILE);
  if (!existsSync(file)) {
    if (env.AUDIT_SECRET_FILE) {
      problems.push(`AUDIT_SECRET_FILE: ${file} does not exist (create it with at least ${MIN_SECRET_LENGTH} random characters, mode 600)`);
      return { auditSecret: '', auditAnchorFile };
    }
    createSecretFile(file);
  }
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < MIN_SECRET_LENGTH)
    problems.push(`AUDIT_SECRET_FILE (${file}): the secret must be at least ${MIN_SECRET_LENGTH} characters`);
  return { auditSecret: secret, auditAnchorFile };
}

// Written aside and linked into place, so a process starting at the same moment sees either
// no file or the whole secret, never an empty one; the first link wins and the others use it.
function createSecretFile(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(aside, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(aside);
  }
}

function readBootstrapToken(env: Env, problems: string[]): string | null {
  if (!env.ADMIN_TOKEN_FILE) return null;
  const file = fromRepo(env.ADMIN_TOKEN_FILE);
  if (!existsSync(file)) {
    problems.push(`ADMIN_TOKEN_FILE: ${file} does not exist (create it with at least ${MIN_TOKEN_LENGTH} random characters)`);
    return null;
  }
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < MIN_TOKEN_LENGTH)
    problems.push(`ADMIN_TOKEN_FILE (${file}): the token must be at least ${MIN_TOKEN_LENGTH} characters`);
  return token;
}

// Only these peers' X-Forwarded-For is believed; anyone else could write any address into it.
function readProxies(env: Env, problems: string[]): string[] {
  const raw = (env.ADMIN_TRUSTED_PROXIES ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  for (const item of raw) {
    const [address, bits, extra] = item.split('/');
    const family = isIP(address ?? '');
    const max = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
      problems.push(`ADMIN_TRUSTED_PROXIES: ${JSON.stringify(item)} is not an IP address or CIDR range`);
    }
  }
  return raw;
}

// Read with or without single sign-on: behind a TLS ingress the cookies must be Secure either way.
function readPublicUrl(env: Env, problems: string[]): string | null {
  const publicUrl = (env.ADMIN_PUBLIC_URL ?? '').replace(/\/+$/, '');
  if (publicUrl === '') return null;
  if (!/^https?:\/\/[^/\s]+$/.test(publicUrl))
    problems.push(
      `ADMIN_PUBLIC_URL: must be the console's origin such as https://admin.example.org, got ${JSON.stringify(env.ADMIN_PUBLIC_URL)}`,
    );
  return publicUrl;
}

function readOidc(env: Env, problems: string[]): OidcSettings | null {
  const issuer = env.OIDC_ISSUER;
  if (!issuer) return null;
  const clientId = env.OIDC_CLIENT_ID ?? '';
  let clientSecret = env.OIDC_CLIENT_SECRET ?? '';
  if (!clientSecret && env.OIDC_CLIENT_SECRET_FILE) {
    const file = fromRepo(env.OIDC_CLIENT_SECRET_FILE);
    if (existsSync(file)) clientSecret = readFileSync(file, 'utf8').trim();
    else problems.push(`OIDC_CLIENT_SECRET_FILE: ${file} does not exist`);
  }
  const publicUrl = (env.ADMIN_PUBLIC_URL ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/\S+$/.test(issuer)) problems.push(`OIDC_ISSUER: must be an http(s) URL, got ${JSON.stringify(issuer)}`);
  if (!clientId) problems.push('OIDC_CLIENT_ID: required with OIDC_ISSUER');
  if (!clientSecret) problems.push('OIDC_CLIENT_SECRET / OIDC_CLIENT_SECRET_FILE: required with OIDC_ISSUER');
  if (publicUrl === '')
    problems.push("ADMIN_PUBLIC_URL: required with OIDC_ISSUER, the console's origin such as https://admin.example.org");
  return { issuer, clientId, clientSecret, publicUrl };
}
