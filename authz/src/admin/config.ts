/**
 * The admin server's and the CLI's configuration: authz's own settings (Redis, key prefix,
 * hash secret, model, default limits), the audit trail's, and the admin listener's. Like
 * config.ts, it reads the environment once, reports every bad variable together, and freezes
 * the result.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, type AuthzConfig } from '../config.js';
import { loadAuditSettings, type AuditSettings } from './audit-config.js';
import { adminName } from './rules.js';

/** Sign-in through an OpenID Connect provider (authorization code flow with PKCE). */
export interface OidcSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The console's public origin; the provider redirects to `<publicUrl>/api/oidc/callback`. */
  readonly publicUrl: string;
}

export interface AdminConfig extends AuthzConfig, AuditSettings {
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
  /** Addresses or CIDR ranges whose X-Forwarded-For is believed (ADMIN_TRUSTED_PROXIES). */
  readonly trustedProxies: readonly string[];
  readonly oidc: OidcSettings | null;
}

type Env = Readonly<Record<string, string | undefined>>;

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const MIN_TOKEN_LENGTH = 32;
const fromRepo = (path: string): string => (isAbsolute(path) ? path : resolve(repoRoot, path));

function base(env: Env, problems: string[]): AuthzConfig | undefined {
  try {
    return loadConfig(env, { grants: false });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
}

/** What the CLI needs: authz's settings and the audit trail's. */
export function loadCliConfig(env: Env = process.env): AuthzConfig & AuditSettings {
  const problems: string[] = [];
  const authz = base(env, problems);
  const audit = loadAuditSettings(env, problems);
  if (problems.length > 0 || !authz) throw new ConfigError(problems, 'admin');
  return Object.freeze({ ...authz, ...audit });
}

/** Parses authz's, the audit trail's and the admin listener's settings from `env`. */
export function loadAdminConfig(env: Env = process.env): AdminConfig {
  const problems: string[] = [];
  const authz = base(env, problems);
  const audit = loadAuditSettings(env, problems);
  const port = env.ADMIN_PORT || '9443';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535)
    problems.push(`ADMIN_PORT: must be an integer from 0 to 65535, got ${JSON.stringify(port)}`);
  const ttl = env.ADMIN_SESSION_TTL_S || '28800';
  if (!/^\d{1,6}$/.test(ttl) || Number(ttl) < 60)
    problems.push(`ADMIN_SESSION_TTL_S: must be an integer from 60 to 999999, got ${JSON.stringify(ttl)}`);
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
  const config = {
    adminHost: env.ADMIN_HOST || '127.0.0.1',
    adminPort: Number(port),
    adminSessionTtlMs: Number(ttl) * 1000,
    bootstrapToken: readBootstrapToken(env, problems),
    bootstrapName,
    trustedProxies: readProxies(env, problems),
    oidc: readOidc(env, problems),
  };
  if (problems.length > 0 || !authz) throw new ConfigError(problems, 'admin');
  return Object.freeze({ ...authz, ...audit, ...config });
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
  if (!/^https?:\/\/[^/\s]+$/.test(publicUrl))
    problems.push(
      `ADMIN_PUBLIC_URL: required with OIDC_ISSUER, the console's origin such as https://admin.example.org, got ${JSON.stringify(env.ADMIN_PUBLIC_URL ?? '')}`,
    );
  return { issuer, clientId, clientSecret, publicUrl };
}
