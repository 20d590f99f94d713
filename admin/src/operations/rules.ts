/**
 * The input rules every admin front end shares (CLI flags and admin API bodies reach the same
 * checks): identifier shapes, limits, names, times. Each failure names its field.
 */
import { isKeyId } from '../../../contract/api-key.js';
import { invalid } from './errors.js';

const ORG_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;
/** The endpoints an organization can be granted. */
export const KNOWN_ENDPOINTS: readonly string[] = ['embeddings'];
const MAX_LIMIT = 9_999_999_999;
const MAX_NAME = 200;
/** The longest rotation overlap: 30 days. */
const MAX_OVERLAP_SECONDS = 30 * 86_400;

/** An organization id: 1-64 of A-Z a-z 0-9 . _ - (no colon, so Redis keys cannot collide). */
export function orgId(value: unknown, field = 'org'): string {
  if (typeof value !== 'string' || !ORG_ID.test(value))
    throw invalid(field, 'must be 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit');
  return value;
}

/** A key id: the 12 upper-case letters after the key prefix. */
export function keyId(value: unknown, field = 'key'): string {
  if (typeof value !== 'string' || !isKeyId(value)) throw invalid(field, 'must be a key id (12 upper-case letters)');
  return value;
}

/** Model ids, de-duplicated; [] grants none. */
export function modelIds(values: readonly unknown[], field = 'models'): string[] {
  for (const value of values) {
    if (typeof value !== 'string' || !MODEL_ID.test(value)) throw invalid(field, `${JSON.stringify(value)} is not a model id`);
  }
  return [...new Set(values as string[])];
}

/** Endpoint names from KNOWN_ENDPOINTS, de-duplicated. */
export function endpoints(values: readonly unknown[], field = 'endpoints'): string[] {
  for (const value of values) {
    if (typeof value !== 'string' || !KNOWN_ENDPOINTS.includes(value))
      throw invalid(field, `${JSON.stringify(value)} is not valid (known: ${KNOWN_ENDPOINTS.join(', ')})`);
  }
  return [...new Set(values as string[])];
}

/** A per-minute limit override: a non-negative integer, or null for "use the default". */
export function limit(value: unknown, field: string): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_LIMIT)
    throw invalid(field, 'must be a non-negative integer (or null for the default)');
  return value;
}

/** A display name: at most 200 characters, no control characters, trimmed. */
export function displayName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value.length > MAX_NAME || /\p{Cc}/u.test(value))
    throw invalid(field, `must be at most ${MAX_NAME} characters without control characters`);
  return value.trim();
}

/** An ISO-8601 date-time (with a date part) to ms, or null when `value` is null. */
export function dateTime(value: unknown, field: string): number | null {
  if (value === null) return null;
  const ms = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw invalid(field, 'must be an ISO-8601 date-time');
  return ms;
}

/** A rotation overlap in whole seconds, 0 to 30 days. */
export function overlapSeconds(value: unknown, field = 'overlapSeconds'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_OVERLAP_SECONDS)
    throw invalid(field, `must be an integer from 0 to ${MAX_OVERLAP_SECONDS} (30 days)`);
  return value;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * A range bound, in the one time format every admin front end accepts: a UTC date
 * (`YYYY-MM-DD`: its first millisecond as `since`, its last as `until`) or an ISO-8601
 * date-time with a zone. Ms since the epoch.
 */
export function timeBound(value: unknown, field: string, edge: 'since' | 'until'): number {
  const text = typeof value === 'string' ? value : '';
  const ms = DATE_ONLY.test(text) ? Date.parse(`${text}T00:00:00Z`) : DATE_TIME.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw invalid(field, 'must be a UTC date (YYYY-MM-DD) or an ISO-8601 date-time with a zone (2031-03-04T05:06:07Z)');
  return DATE_ONLY.test(text) && edge === 'until' ? ms + 86_399_999 : ms;
}

/** A time range (each bound as timeBound reads it): since ≤ until when both are given. */
export function range(since: unknown, until: unknown): { since?: number; until?: number } {
  const from = since === undefined || since === '' ? undefined : timeBound(since, 'since', 'since');
  const to = until === undefined || until === '' ? undefined : timeBound(until, 'until', 'until');
  if (from !== undefined && to !== undefined && from > to) throw invalid('since', 'must not be after until');
  return { since: from, until: to };
}

const ADMIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$/;
/** Administrator roles, least to most: viewer reads, operator changes organizations and keys, owner also manages administrators. */
export const ROLES = ['viewer', 'operator', 'owner'] as const;
export type Role = (typeof ROLES)[number];

/** An administrator's name: 1-100 of A-Z a-z 0-9 . _ @ + - (an email address fits, as OpenID Connect sign-in needs). */
export function adminName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || !ADMIN_NAME.test(value))
    throw invalid(field, 'must be 1-100 of A-Z a-z 0-9 . _ @ + - starting with a letter or digit');
  return value;
}

/** One of ROLES. */
export function role(value: unknown, field = 'role'): Role {
  if (typeof value !== 'string' || !(ROLES as readonly string[]).includes(value))
    throw invalid(field, `must be one of ${ROLES.join(', ')}`);
  return value as Role;
}
