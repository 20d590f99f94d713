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
const fromRepo = (path: string): string => (isAbsolute(path) ? path : resolve(repoRoot, path));

// Redis, the access settings and the audit trail: what both the CLI and the server read.
function readOpen(read: EnvReader): OpenConfig {
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
    ...readAuditSettings(read),
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
  return read.finish('admin', { ...readOpen(read), cliToken: readCliToken(read) });
}

/**
 * The token the CLI acts with: ADMIN_TOKEN, else the file ADMIN_TOKEN_FILE, else locally
 * `.local/admin-token` (the owner token `make console` registers) when it exists.
 */
function readCliToken(read: EnvReader): CliToken | null {
  const token = read.optional('ADMIN_TOKEN');
  if (token !== undefined) return { token, from: 'ADMIN_TOKEN' };
  const named = read.optional('ADMIN_TOKEN_FILE');
  if (named !== undefined) {
    const file = fromRepo(named);
    if (existsSync(file)) return { token: readFileSync(file, 'utf8').trim(), from: 'ADMIN_TOKEN_FILE' };
    read.problems.push(`ADMIN_TOKEN_FILE: ${file} does not exist (it holds your administrator token)`);
    return null;
  }
  const local = fromRepo(read.string('ADMIN_TOKEN_FILE'));
  return existsSync(local) ? { token: readFileSync(local, 'utf8').trim(), from: '.local/admin-token' } : null;
}

/** Parses the settings the CLI opens plus the admin listener's from `env`. */
export function loadAdminConfig(env: Env = process.env): AdminConfig {
  const read = new EnvReader(env);
  const cli = readOpen(read);
  const logLevel = readLogLevel(read);
  const metricsToken = readTokenValues(read, 'METRICS_TOKEN', repoRoot);
  const adminPort = read.integer('ADMIN_PORT', 0, 65535);
  const ttlSeconds = read.integer('ADMIN_SESSION_TTL_S', 60, 999_999);
  const maxSeconds = read.integer('ADMIN_SESSION_MAX_S', 60, 9_999_999);
  const bootstrapName = read.string('ADMIN_BOOTSTRAP_NAME');
  try {
    adminName(bootstrapName);
  } catch {
    read.problem('ADMIN_BOOTSTRAP_NAME', 'be an administrator name (1-100 of A-Z a-z 0-9 . _ @ + -)', bootstrapName);
  }
  // Retired, not a setting: refusing to start names what replaced it.
  if (env.ADMIN_ACTOR_HEADER)
    read.problems.push(
      'ADMIN_ACTOR_HEADER: no longer read; administrators sign in with their own token or through OpenID Connect (OIDC_ISSUER)',
    );
  return read.finish('admin', {
    ...cli,
    adminHost: read.string('ADMIN_HOST'),
    adminPort,
    adminSessionTtlMs: ttlSeconds * 1000,
    adminSessionMaxMs: maxSeconds * 1000,
    bootstrapToken: readBootstrapToken(read),
    bootstrapName,
    trustedProxies: readProxies(read),
    oidc: readOidc(read),
    publicUrl: readPublicUrl(read),
    logLevel,
    metricsToken,
  });
}

/**
 * Parses the audit settings, adding each problem to `problems`. Locally (neither variable set)
 * the secret file `make up` creates is used, and created here when missing, as `make up` would:
 * a lost secret cannot silently pass, since every record then fails verification.
 */
function readAuditSettings(read: EnvReader): Pick<OpenConfig, 'auditSecret' | 'auditAnchorFile'> {
  const problems = read.problems;
  const auditAnchorFile = fromRepo(read.string('AUDIT_ANCHOR_FILE'));
  const direct = read.optional('AUDIT_SECRET');
  if (direct !== undefined) {
    if (direct.length < MIN_SECRET_LENGTH) problems.push(`AUDIT_SECRET: must be at least ${MIN_SECRET_LENGTH} characters`);
    return { auditSecret: direct, auditAnchorFile };
  }
  const file = fromRepo(read.string('AUDIT_SECRET_FILE'));
  if (!existsSync(file)) {
    if (read.optional('AUDIT_SECRET_FILE') !== undefined) {
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

// The server's ADMIN_TOKEN_FILE has no default: the declared one is where the CLI looks.
function readBootstrapToken(read: EnvReader): string | null {
  const problems = read.problems;
  const named = read.optional('ADMIN_TOKEN_FILE');
  if (named === undefined) return null;
  const file = fromRepo(named);
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
function readProxies(read: EnvReader): string[] {
  const raw = read.list('ADMIN_TRUSTED_PROXIES');
  for (const item of raw) {
    const [address, bits, extra] = item.split('/');
    const family = isIP(address ?? '');
    const max = family === 6 ? 128 : 32;
    if (family === 0 || extra !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
      read.problems.push(`ADMIN_TRUSTED_PROXIES: ${JSON.stringify(item)} is not an IP address or CIDR range`);
    }
  }
  return raw;
}

// Read with or without single sign-on: behind a TLS ingress the cookies must be Secure either way.
function readPublicUrl(read: EnvReader): string | null {
  const given = read.optional('ADMIN_PUBLIC_URL');
  const publicUrl = (given ?? '').replace(/\/+$/, '');
  if (publicUrl === '') return null;
  if (!/^https?:\/\/[^/\s]+$/.test(publicUrl))
    read.problem('ADMIN_PUBLIC_URL', "be the console's origin such as https://admin.example.org", given);
  return publicUrl;
}

function readOidc(read: EnvReader): OidcSettings | null {
  const problems = read.problems;
  const issuer = read.optional('OIDC_ISSUER');
  if (issuer === undefined) return null;
  const clientId = read.optional('OIDC_CLIENT_ID') ?? '';
  let clientSecret = read.optional('OIDC_CLIENT_SECRET') ?? '';
  const secretFile = read.optional('OIDC_CLIENT_SECRET_FILE');
  if (!clientSecret && secretFile !== undefined) {
    const file = fromRepo(secretFile);
    if (existsSync(file)) clientSecret = readFileSync(file, 'utf8').trim();
    else problems.push(`OIDC_CLIENT_SECRET_FILE: ${file} does not exist`);
  }
  const publicUrl = (read.optional('ADMIN_PUBLIC_URL') ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/\S+$/.test(issuer)) problems.push(`OIDC_ISSUER: must be an http(s) URL, got ${JSON.stringify(issuer)}`);
  if (!clientId) problems.push('OIDC_CLIENT_ID: required with OIDC_ISSUER');
  if (!clientSecret) problems.push('OIDC_CLIENT_SECRET / OIDC_CLIENT_SECRET_FILE: required with OIDC_ISSUER');
  if (publicUrl === '')
    problems.push("ADMIN_PUBLIC_URL: required with OIDC_ISSUER, the console's origin such as https://admin.example.org");
  return { issuer, clientId, clientSecret, publicUrl };
}
