/**
 * The admin server's configuration: authz's own settings (Redis, key prefix, hash secret,
 * model, default limits) plus the admin listener's. Like config.ts, it reads the environment
 * once, reports every bad variable together, and freezes the result.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, type AuthzConfig } from '../config.js';

export interface AdminConfig extends AuthzConfig {
  readonly adminHost: string;
  readonly adminPort: number;
  /** The admin token (from ADMIN_TOKEN_FILE); at least 32 characters. */
  readonly adminToken: string;
  /** A header set by a trusted SSO proxy naming the signed-in user, or null. */
  readonly adminActorHeader: string | null;
  /** How long a console session lasts without use. */
  readonly adminSessionTtlMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const MIN_TOKEN_LENGTH = 32;

/** Parses authz's and the admin listener's settings from `env` (defaults to `process.env`). */
export function loadAdminConfig(env: Env = process.env): AdminConfig {
  const problems: string[] = [];
  let base: AuthzConfig | undefined;
  try {
    base = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
  }
  const port = env.ADMIN_PORT || '9443';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) problems.push(`ADMIN_PORT: must be an integer from 0 to 65535, got ${JSON.stringify(port)}`);
  const header = env.ADMIN_ACTOR_HEADER || null;
  if (header !== null && !/^[a-z0-9-]{1,64}$/.test(header)) problems.push(`ADMIN_ACTOR_HEADER: must be a lower-case header name, got ${JSON.stringify(header)}`);
  const ttl = env.ADMIN_SESSION_TTL_S || '28800';
  if (!/^\d{1,6}$/.test(ttl) || Number(ttl) < 60) problems.push(`ADMIN_SESSION_TTL_S: must be an integer from 60 to 999999, got ${JSON.stringify(ttl)}`);
  const adminToken = readToken(env, problems);
  if (problems.length > 0 || !base) throw new ConfigError(problems);
  return Object.freeze({
    ...base, adminHost: env.ADMIN_HOST || '127.0.0.1', adminPort: Number(port), adminToken, adminActorHeader: header, adminSessionTtlMs: Number(ttl) * 1000,
  });
}

// Fail closed: without a token file there is no admin listener at all.
function readToken(env: Env, problems: string[]): string {
  const raw = env.ADMIN_TOKEN_FILE || '.local/admin-token';
  const file = isAbsolute(raw) ? raw : resolve(repoRoot, raw);
  if (!existsSync(file)) {
    problems.push(`ADMIN_TOKEN_FILE: ${file} does not exist (create it with at least ${MIN_TOKEN_LENGTH} random characters)`);
    return '';
  }
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < MIN_TOKEN_LENGTH) problems.push(`ADMIN_TOKEN_FILE (${file}): the token must be at least ${MIN_TOKEN_LENGTH} characters`);
  return token;
}
