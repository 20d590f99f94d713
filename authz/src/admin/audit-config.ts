/**
 * The audit trail's settings: the secret that keys the chain and signs checkpoints (never
 * stored in Redis, so writing to Redis is not enough to rewrite the trail) and the checkpoint
 * file outside Redis. Read once by the admin server's and the CLI's configuration.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AuditSettings {
  /** AUDIT_SECRET, or the contents of AUDIT_SECRET_FILE; at least 32 characters. */
  readonly auditSecret: string;
  /** AUDIT_ANCHOR_FILE: where signed checkpoints of the chain are appended. */
  readonly auditAnchorFile: string;
}

type Env = Readonly<Record<string, string | undefined>>;

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const MIN_SECRET_LENGTH = 32;
const DEFAULT_SECRET_FILE = '.local/audit-secret';
const fromRepo = (path: string): string => (isAbsolute(path) ? path : resolve(repoRoot, path));

/**
 * Parses the audit settings, adding each problem to `problems`. Locally (neither variable set)
 * the secret file `make up` creates is used, and created here when missing, as `make up` would:
 * a lost secret cannot silently pass, since every record then fails verification.
 */
export function loadAuditSettings(env: Env, problems: string[]): AuditSettings {
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
