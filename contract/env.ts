/**
 * One way for every process to read its settings from the environment: each reader names its
 * variable, a bad value is noted and reading goes on, and `finish` throws one `ConfigError`
 * listing every bad variable, each worded "NAME: must …, got "value"". authz and the embedder
 * both read through it, so their start-up errors read alike. Every default comes from the
 * variable's declaration (contract/settings.ts), looked up by its name: no reader carries one.
 */
import { settingDefault, type SettingName, type SettingOf } from './settings.js';

/** The environment as a config module receives it (`process.env` by default). */
export type Env = Readonly<Record<string, string | undefined>>;

/** Thrown when the environment holds bad values; `problems` has one line per bad variable. */
export class ConfigError extends Error {
  constructor(
    readonly problems: readonly string[],
    service?: string,
  ) {
    super(`invalid ${service ? `${service} ` : ''}configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** The log levels pino accepts; every process reads LOG_LEVEL against this list (readLogLevel). */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Reads variables from one environment and collects what is wrong with them. */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  /** Notes a bad variable; `must` completes "NAME: must …". */
  problem(name: string, must: string, got?: string): void {
    this.problems.push(`${name}: must ${must}${got === undefined ? '' : `, got ${JSON.stringify(got)}`}`);
  }

  /** The trimmed value, or undefined when unset or blank (a variable without a default, or one whose default is computed). */
  optional(name: SettingName): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  /** The trimmed value, or the declared default when unset or blank. */
  string(name: SettingOf<string>): string {
    return this.optional(name) ?? settingDefault(name);
  }

  /** The trimmed value, '' when set but blank (meaningful: "none"), the declared default when unset. */
  blankable(name: SettingOf<string>): string {
    const value = this.env[name];
    return value === undefined ? settingDefault(name) : value.trim();
  }

  /** A whole number from `min` to `max`, or the declared default when unset; a bad value is noted and the default stands in. */
  integer(name: SettingOf<number>, min: number, max: number = Number.MAX_SAFE_INTEGER): number {
    return this.optionalInteger(name, min, max) ?? settingDefault(name);
  }

  /** A whole number from `min` to `max`, or undefined when unset or bad (noted): for a default the caller computes. */
  optionalInteger(name: SettingName, min: number, max: number = Number.MAX_SAFE_INTEGER): number | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.problem(name, max === Number.MAX_SAFE_INTEGER ? `be an integer of at least ${min}` : `be an integer from ${min} to ${max}`, raw);
      return undefined;
    }
    return value;
  }

  /** The value (or the declared default), which must match `pattern`; `meaning` says what that is, in words. */
  matching(name: SettingOf<string>, pattern: RegExp, meaning: string): string {
    const value = this.string(name);
    if (!pattern.test(value)) this.problem(name, `be ${meaning}`, value);
    return value;
  }

  /** One of `allowed` (or the declared default). */
  oneOf<T extends string>(name: SettingOf<string>, allowed: readonly T[]): T {
    const value = this.string(name);
    if (!(allowed as readonly string[]).includes(value)) this.problem(name, `be one of ${allowed.join(', ')}`, value);
    return value as T;
  }

  /** A comma-separated list, items trimmed, empty items dropped; [] when unset. */
  list(name: SettingName): string[] {
    return (this.optional(name) ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  }

  /** Throws one ConfigError naming every bad variable, or returns `config` frozen. */
  finish<T extends object>(service: string, config: T): Readonly<T> {
    if (this.problems.length > 0) throw new ConfigError(this.problems, service);
    return Object.freeze(config);
  }
}

/** LOG_LEVEL, read the same way by every process. */
export function readLogLevel(read: EnvReader): LogLevel {
  return read.oneOf('LOG_LEVEL', LOG_LEVELS);
}

/** OTEL_EXPORTER_OTLP_ENDPOINT (an OTLP/HTTP base URL); undefined turns tracing off. */
export function readOtlpEndpoint(read: EnvReader): string | undefined {
  const endpoint = read.optional('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint !== undefined && !/^https?:\/\/[^\s/]+\/?$/.test(endpoint)) {
    read.problem('OTEL_EXPORTER_OTLP_ENDPOINT', 'be an http(s):// base URL (host and port, no path)', endpoint);
  }
  return endpoint;
}
