/**
 * Reading a secret setting, the same way in every process: `NAME` itself, else the file that
 * `NAME_FILE` names (default: the one `make up` writes under .local/), at least 32 characters.
 * A bad or missing one is noted on the reader (contract/env.ts), so a config reports every bad
 * variable at once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { EnvReader } from './env.js';

/** The shortest secret any service accepts. */
const MIN_SECRET_LENGTH = 32;

function resolvePath(path: string, root: string): string {
  return isAbsolute(path) ? path : resolve(root, path);
}

/** The secret `name` or its file (relative paths from `root`); '' with a problem noted when absent or short. */
export function readSecret(read: EnvReader, name: string, defaultFile: string, root: string): string {
  const direct = read.optional(name);
  const file = resolvePath(read.string(`${name}_FILE`, defaultFile), root);
  let secret = direct;
  if (secret === undefined) {
    if (!existsSync(file)) {
      read.problem(`${name} / ${name}_FILE`, `be set: no secret given and ${file} does not exist (run \`make up\` or set ${name})`);
      return '';
    }
    secret = readFileSync(file, 'utf8').trim();
  }
  if (secret.length < MIN_SECRET_LENGTH) {
    read.problem(direct !== undefined ? name : `${name}_FILE (${file})`, `hold a secret of at least ${MIN_SECRET_LENGTH} characters`);
  }
  return secret;
}

/**
 * A token shared with one other party (Envoy, Prometheus): `NAME`, else the file `NAME_FILE`
 * names, else `defaultFile` when it exists. Unset is undefined (the caller decides whether that
 * is fatal); set but unreadable, short, or with spaces (it travels as a header) is a problem.
 */
export function readToken(read: EnvReader, name: string, defaultFile: string, root: string): string | undefined {
  let token = read.optional(name);
  const named = read.optional(`${name}_FILE`);
  if (token === undefined) {
    const file = resolvePath(named ?? defaultFile, root);
    if (!existsSync(file)) {
      if (named !== undefined) read.problem(`${name}_FILE`, 'name a file that exists', file);
      return undefined;
    }
    token = readFileSync(file, 'utf8').trim();
  }
  if (token.length < MIN_SECRET_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    read.problem(`${name} / ${name}_FILE`, `hold a token of at least ${MIN_SECRET_LENGTH} printable characters without spaces`);
  }
  return token;
}

/** A file a setting names (a mounted Secret key); unset is undefined, set but missing or not matching is a problem. */
export function readOptionalFile(read: EnvReader, name: string, pattern: RegExp, meaning: string, root: string): string | undefined {
  const path = read.optional(name);
  if (path === undefined) return undefined;
  const file = resolvePath(path, root);
  if (!existsSync(file)) {
    read.problem(name, 'name a file that exists', file);
    return undefined;
  }
  const value = readFileSync(file, 'utf8').trim();
  if (!pattern.test(value)) read.problem(name, `name a file holding ${meaning}`, file);
  return value;
}
