/**
 * One way for every process to read its settings from the environment: each reader names its
 * variable, a bad value is noted and reading goes on, and `finish` throws one `ConfigError`
 * listing every bad variable, each worded "NAME: must …, got "value"". authz and the embedder
 * both read through it, so their start-up errors read alike.
 */

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

  /** The trimmed value, or undefined when unset or blank. */
  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  /** The trimmed value, or `fallback` when unset or blank. */
  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  /** A whole number from `min` to `max`; a bad value is noted and `fallback` stands in. */
  integer(name: string, fallback: number, min: number, max: number = Number.MAX_SAFE_INTEGER): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.problem(name, max === Number.MAX_SAFE_INTEGER ? `be an integer of at least ${min}` : `be an integer from ${min} to ${max}`, raw);
      return fallback;
    }
    return value;
  }

  /** A value (or `fallback`) that must match `pattern`; `meaning` says what that is, in words. */
  matching(name: string, fallback: string, pattern: RegExp, meaning: string): string {
    const value = this.string(name, fallback);
    if (!pattern.test(value)) this.problem(name, `be ${meaning}`, value);
    return value;
  }

  /** One of `allowed` (or `fallback`). */
  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const value = this.string(name, fallback);
    if (!(allowed as readonly string[]).includes(value)) this.problem(name, `be one of ${allowed.join(', ')}`, value);
    return value as T;
  }

  /** `true`/`1` or `false`/`0` (or `fallback` when unset). */
  boolean(name: string, fallback: boolean): boolean {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    this.problem(name, 'be true, false, 1 or 0', raw);
    return fallback;
  }

  /** A comma-separated list, items trimmed, empty items dropped; [] when unset. */
  list(name: string): string[] {
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
  return read.oneOf('LOG_LEVEL', 'info', LOG_LEVELS);
}

/** OTEL_EXPORTER_OTLP_ENDPOINT (an OTLP/HTTP base URL); undefined turns tracing off. */
export function readOtlpEndpoint(read: EnvReader): string | undefined {
  const endpoint = read.optional('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (endpoint !== undefined && !/^https?:\/\/[^\s/]+\/?$/.test(endpoint)) {
    read.problem('OTEL_EXPORTER_OTLP_ENDPOINT', 'be an http(s):// base URL (host and port, no path)', endpoint);
  }
  return endpoint;
}
