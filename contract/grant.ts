/**
 * The grant: what authz decided about one request, in a form only authz can produce. authz signs
 * it on an allowed Check (HMAC-SHA-256 with a secret it shares with the embedder only); the
 * embedder serves nothing without a grant that verifies, has not expired and names the model
 * asked for. A forged, altered, expired or replayed header is refused, so a caller who reaches
 * the embedder without passing the gateway gets nothing, whatever identity headers it sends.
 *
 * Format: `v1.<base64url(JSON payload)>.<base64url(HMAC over "v1." + payload part)>`. Pure: the
 * clock is passed in. Verifying costs a few microseconds (one HMAC over ~200 bytes).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The fields authz grants; identifiers and limits only, never request content. */
export interface GrantClaims {
  /** Organization id. */
  readonly org: string;
  /** API key id (not secret). */
  readonly key: string;
  /** The served model the organization may use, or '' when it may not. */
  readonly model: string;
  /** The organization's tokens-per-minute limit for that model. */
  readonly tpm: number;
  /** A fresh id per Check: the settlement id, so the grant can be admitted and recorded once. */
  readonly uid: string;
  /** Expiry, ms since the epoch. */
  readonly exp: number;
  /**
   * The request authz decided on: its method and its path exactly as Envoy sent it (query
   * string included). The embedder serves the grant only on that method and path.
   */
  readonly method: string;
  readonly path: string;
}

/** Why a grant was refused (never shown to a client beyond "not authorized"). */
type GrantFault = 'missing' | 'malformed' | 'signature' | 'expired';

export type GrantCheck = { readonly ok: true; readonly claims: GrantClaims } | { readonly ok: false; readonly fault: GrantFault };

const VERSION = 'v1';
/** Accepted clock difference between authz and the embedder. */
export const GRANT_CLOCK_SKEW_MS = 5_000;
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:/+=@-]{0,199}$/;
const METHOD = /^[A-Z]{1,16}$/;
/** An origin-form request target, printable ASCII only, bounded. */
const PATH = /^\/[\x21-\x7e]{0,2047}$/;

function mac(secret: string, signed: string): Buffer {
  return createHmac('sha256', secret).update(signed).digest();
}

/** Signs `claims` into the header value. */
export function signGrant(claims: GrantClaims, secret: string): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signed = `${VERSION}.${payload}`;
  return `${signed}.${mac(secret, signed).toString('base64url')}`;
}

/**
 * Verifies a header value at time `now` against every accepted secret (during a rotation: the
 * new and the old; contract/secrets.ts); the claims only when signature, shape and expiry hold.
 */
export function verifyGrant(value: string | string[] | undefined, secrets: readonly string[], now: number): GrantCheck {
  if (typeof value !== 'string' || value === '') return { ok: false, fault: 'missing' };
  const parts = value.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) return { ok: false, fault: 'malformed' };
  const given = Buffer.from(parts[2]!, 'base64url');
  const signed = `${parts[0]}.${parts[1]}`;
  // One HMAC per accepted secret until one matches: a second one only during a rotation.
  const matches = (secret: string): boolean => {
    const expected = mac(secret, signed);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  if (!secrets.some(matches)) return { ok: false, fault: 'signature' };
  const claims = parseClaims(parts[1]!);
  if (!claims) return { ok: false, fault: 'malformed' };
  if (claims.exp + GRANT_CLOCK_SKEW_MS < now) return { ok: false, fault: 'expired' };
  return { ok: true, claims };
}

function parseClaims(payload: string): GrantClaims | null {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof raw !== 'object' || raw === null) return null;
  const c = raw as Record<string, unknown>;
  const ids = [c.org, c.key, c.uid].every((v) => typeof v === 'string' && IDENTIFIER.test(v));
  const model = typeof c.model === 'string' && (c.model === '' || IDENTIFIER.test(c.model));
  const numbers = [c.tpm, c.exp].every((v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0);
  const target = typeof c.method === 'string' && METHOD.test(c.method) && typeof c.path === 'string' && PATH.test(c.path);
  if (!ids || !model || !numbers || !target) return null;
  return {
    org: c.org as string,
    key: c.key as string,
    model: c.model as string,
    tpm: c.tpm as number,
    uid: c.uid as string,
    exp: c.exp as number,
    method: c.method as string,
    path: c.path as string,
  };
}
