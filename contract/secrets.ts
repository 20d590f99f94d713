/**
 * Reading a secret setting, the same way in every process: `NAME` itself, else the file that
 * `NAME_FILE` names (default: its declared one, the file `make up` writes under .local/), at least 32 characters.
 * A bad or missing one is noted on the reader (contract/env.ts), so a config reports every bad
 * variable at once.
 *
 * Rotation (deploy/README.md, "Rotating the internal secrets"): the internal secrets (the grant
 * secret, the caller token, the metrics token) may hold several values, one per line (at most
 * MAX_SECRET_VALUES). The first line is the one in use: authz signs grants with it, Envoy sends
 * it. Every line is accepted by whoever verifies. One file, so each step of a rotation (add the
 * new value second; move it first; drop the old) is one atomic edit of one Secret key, and every
 * reader sees the same ordered set. A file is re-read every SECRET_RELOAD_MS (`watchSecrets`), so
 * a mounted Secret's new content is used without a restart; a bad new content is refused and the
 * values already held stay in force (fail safe: never fewer accepted values than a valid file).
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { EnvReader } from './env.js';
import { settingDefault, type SettingName, type SettingOf } from './settings.js';

/** A secret setting `NAME` whose file `NAME_FILE` is declared with a default (contract/settings.ts). */
type SecretSetting = { [N in SettingName]: `${N}_FILE` extends SettingOf<string> ? N : never }[SettingName];

/** `NAME_FILE`, the setting naming the file a secret `NAME` is read from. */
const fileOf = <N extends SecretSetting>(name: N) => `${name}_FILE` as `${N}_FILE` & SettingOf<string>;

/** The shortest secret any service accepts. */
const MIN_SECRET_LENGTH = 32;

function resolvePath(path: string, root: string): string {
  return isAbsolute(path) ? path : resolve(root, path);
}

/** The secret `name` or its file (relative paths from `root`); '' with a problem noted when absent or short. */
export function readSecret(read: EnvReader, name: SecretSetting, root: string): string {
  const direct = read.optional(name);
  const file = resolvePath(read.string(fileOf(name)), root);
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

/** A file a setting names (a mounted Secret key); unset is undefined, set but missing or not matching is a problem. */
export function readOptionalFile(read: EnvReader, name: SettingName, pattern: RegExp, meaning: string, root: string): string | undefined {
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

/** Values one secret setting may hold at once: the one in use and those still (or already) accepted. */
export const MAX_SECRET_VALUES = 4;
/** A secret file larger than this is refused (it is a few lines of at most a few hundred bytes). */
const MAX_SECRET_FILE_BYTES = 16 * 1024;
/** How often a secret file is read again for a rotation; bounded work: one small read per file. */
const SECRET_RELOAD_MS = 2_000;

/** What a rotatable secret's value must look like. */
type SecretShape = 'secret' | 'token';

/**
 * A rotatable secret's values: `current` signs or is sent, every one of `accepted` (current
 * first) is accepted. Read at each use: `watchSecrets` replaces them when the file changes.
 */
export class SecretValues {
  #values: readonly string[];
  #text: string | undefined;

  constructor(
    values: readonly string[],
    /** The file they came from (watched for rotation); undefined for a value set directly. */
    readonly file?: string,
    /** The setting's name, for log lines and problems (never the values). */
    readonly name = 'secret',
    readonly shape: SecretShape = 'secret',
  ) {
    if (values.length === 0) throw new Error(`${name} holds no value`);
    this.#values = Object.freeze([...values]);
  }

  /** The value in use: authz signs with it, the sender sends it. */
  get current(): string {
    return this.#values[0]!;
  }

  /** Every value a verifier accepts, the current one first. A new array after each change. */
  get accepted(): readonly string[] {
    return this.#values;
  }

  /**
   * Takes `text` (the file's new content) when it is valid; 'unchanged', 'changed', or the
   * problem (the values held stay in force).
   */
  update(text: string): 'unchanged' | 'changed' | { readonly problem: string } {
    if (text === this.#text) return 'unchanged';
    this.#text = text;
    const parsed = parseSecretValues(text, this.shape);
    if (typeof parsed === 'string') return { problem: parsed };
    if (parsed.length === this.#values.length && parsed.every((v, i) => v === this.#values[i])) return 'unchanged';
    this.#values = Object.freeze(parsed);
    return 'changed';
  }

  /** Notes that the file could not be read (the values held stay); true the first time in a row. */
  unreadable(code: string): boolean {
    const marker = `\0${code}`;
    if (this.#text === marker) return false;
    this.#text = marker;
    return true;
  }
}

/** A fixed set of values (tests, values set directly); never reloaded. */
export function fixedSecret(...values: string[]): SecretValues {
  return new SecretValues(values);
}

/** The values in `text`, one per non-empty line, or what is wrong with them. */
function parseSecretValues(text: string, shape: SecretShape): string[] | string {
  if (text.length > MAX_SECRET_FILE_BYTES) return `be at most ${MAX_SECRET_FILE_BYTES} bytes`;
  const values = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (values.length === 0) return 'hold a value';
  if (values.length > MAX_SECRET_VALUES) return `hold at most ${MAX_SECRET_VALUES} values, one per line`;
  if (new Set(values).size !== values.length) return 'hold each value once';
  for (const value of values) {
    if (shape === 'secret' && value.length < MIN_SECRET_LENGTH)
      return `hold a secret of at least ${MIN_SECRET_LENGTH} characters on each line`;
    // A token travels as a header: printable, no spaces.
    if (shape === 'token' && (value.length < MIN_SECRET_LENGTH || !/^[\x21-\x7e]+$/.test(value)))
      return `hold a token of at least ${MIN_SECRET_LENGTH} printable characters without spaces on each line`;
  }
  return values;
}

function readValues(read: EnvReader, name: string, file: string | undefined, text: string, shape: SecretShape): SecretValues | undefined {
  const parsed = parseSecretValues(text, shape);
  if (typeof parsed === 'string') {
    // Named as before rotation existed, so operators' searches and alerts still match.
    read.problem(shape === 'token' ? `${name} / ${name}_FILE` : file === undefined ? name : `${name}_FILE (${file})`, parsed);
    return undefined;
  }
  const values = new SecretValues(parsed, file, name, shape);
  if (file !== undefined) values.update(text);
  return values;
}

/**
 * A rotatable secret `name` (GRANT_SECRET): `NAME`, else the file `NAME_FILE` names (default: its
 * declared one), one value per line. Absent or bad is a problem noted on `read` (the returned
 * placeholder is never used: `finish` throws).
 */
export function readSecretValues(read: EnvReader, name: SecretSetting, root: string): SecretValues {
  const direct = read.optional(name);
  const file = resolvePath(read.string(fileOf(name)), root);
  if (direct === undefined && !existsSync(file)) {
    read.problem(`${name} / ${name}_FILE`, `be set: no secret given and ${file} does not exist (run \`make up\` or set ${name})`);
    return PLACEHOLDER;
  }
  const values =
    direct !== undefined
      ? readValues(read, name, undefined, direct, 'secret')
      : readValues(read, name, file, readFileSync(file, 'utf8'), 'secret');
  return values ?? PLACEHOLDER;
}

/**
 * A rotatable token shared with another party (Envoy: AUTHZ_CALLER_TOKEN; Prometheus:
 * METRICS_TOKEN): `NAME`, else the file `NAME_FILE` names, else its declared default when it exists; one
 * value per line. Unset is undefined (the caller decides whether that is fatal); set but
 * unreadable, short, or with spaces (it travels as a header) is a problem.
 */
export function readTokenValues(read: EnvReader, name: SecretSetting, root: string): SecretValues | undefined {
  const direct = read.optional(name);
  if (direct !== undefined) return readValues(read, name, undefined, direct, 'token');
  const named = read.optional(fileOf(name));
  const file = resolvePath(named ?? settingDefault(fileOf(name)), root);
  if (!existsSync(file)) {
    if (named !== undefined) read.problem(`${name}_FILE`, 'name a file that exists', file);
    return undefined;
  }
  return readValues(read, name, file, readFileSync(file, 'utf8'), 'token');
}

// Stands in for a secret whose problem was noted; `finish` throws before anything uses it.
const PLACEHOLDER = new SecretValues(['unset'.repeat(8)], undefined, 'unset');

/** What `watchSecrets` reports: a secret's new values taken, or a bad or unreadable file refused. */
export type SecretReload =
  | { readonly event: 'secret_reloaded'; readonly name: string; readonly values: number }
  | { readonly event: 'secret_refused'; readonly name: string; readonly problem: string };

/**
 * Re-reads each file-backed secret every `intervalMs` and takes a valid new content at once,
 * reporting each change or refusal (names and counts only, never values). The timer does not
 * keep the process alive; `poll` reads the files once now (what a tick does).
 */
export function watchSecrets(
  secrets: ReadonlyArray<SecretValues | undefined>,
  report: (reload: SecretReload) => void,
  intervalMs = SECRET_RELOAD_MS,
): { readonly stop: () => void; readonly poll: () => Promise<void> } {
  const watched = secrets.filter((s): s is SecretValues & { file: string } => s?.file !== undefined);
  let running = false;
  const tick = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      for (const secret of watched) {
        let text: string;
        try {
          text = await readFile(secret.file, 'utf8');
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code ?? 'error';
          if (secret.unreadable(code))
            report({ event: 'secret_refused', name: secret.name, problem: `cannot read ${secret.file}: ${code}` });
          continue;
        }
        const outcome = secret.update(text);
        if (outcome === 'changed') report({ event: 'secret_reloaded', name: secret.name, values: secret.accepted.length });
        else if (outcome !== 'unchanged')
          report({ event: 'secret_refused', name: secret.name, problem: `${secret.file} must ${outcome.problem}` });
      }
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), poll: tick };
}
