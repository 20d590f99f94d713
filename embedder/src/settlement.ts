/**
 * One request's settlement with authz: its tokens admitted before any model work, its usage
 * recorded before its 200 leaves, and its tokens refunded when it will not be answered 200.
 * Refusals become the catalogue's problems with the token rate-limit headers; an authz that
 * cannot answer fails the request closed (503 authorization_unavailable), never open.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Admission, AdmissionTicket, AdmitOutcome } from './admission-client.js';
import { IDENTITY_HEADERS, REQUEST_UID_HEADER } from '../../authz/src/headers.js';
import { ProblemError } from './errors.js';

const UID = /^[0-9a-f-]{36}$/;

/** The admission id for a request: the gateway's request uid, or a fresh one off the gateway. */
export function admissionIdOf(headers: IncomingHttpHeaders): string {
  const uid = headers[REQUEST_UID_HEADER];
  return typeof uid === 'string' && UID.test(uid) ? uid : randomUUID();
}

/** The gateway's request-id rule (envoy.yaml.tmpl's Lua filter, the OpenAPI document): 1 to 200 of A-Z a-z 0-9 . _ : / + = @ -. */
export const REQUEST_ID_RULE = /^[A-Za-z0-9._:/+=@-]{1,200}$/;

/** The organization and key authz identified, or null when the request did not pass authz. */
export function identityOf(headers: IncomingHttpHeaders): { org: string; keyId: string } | null {
  const org = headers[IDENTITY_HEADERS.org];
  const keyId = headers[IDENTITY_HEADERS.key];
  return typeof org === 'string' && org !== '' && typeof keyId === 'string' && keyId !== '' ? { org, keyId } : null;
}

/** Settles one request; create it once identity and model are known. */
export class Settlement {
  private ticket: AdmissionTicket;
  private admitted = false;
  private recorded = false;
  /** The token rate-limit headers, once Admit answered. */
  headers: Record<string, string> = {};
  /** Why Admit refused, when it did. */
  refusal: ProblemError | undefined;

  constructor(
    private readonly admission: Admission,
    identity: { org: string; keyId: string },
    ids: { admissionId: string; requestId: string },
    model: string,
    private readonly retryAfterSeconds: number,
  ) {
    const requestId = REQUEST_ID_RULE.test(ids.requestId) ? ids.requestId : randomUUID();
    this.ticket = { admissionId: ids.admissionId, org: identity.org, keyId: identity.keyId, model, requestId, tokens: 0 };
  }

  /** Charges `tokens`; false (with `refusal` set) when the budget cannot take them. */
  async admit(tokens: number): Promise<boolean> {
    this.ticket = { ...this.ticket, tokens };
    const outcome = await this.guard(() => this.admission.admit(this.ticket));
    this.headers = tokenHeaders(outcome);
    if (outcome.kind === 'admitted') return (this.admitted = true);
    this.refusal = tokenRefusal(outcome, tokens, { ...this.headers, ...this.retryAfter(outcome) });
    return false;
  }

  /** Records the usage; throws a 503 problem (after refunding) when it cannot be recorded. */
  async record(): Promise<void> {
    try {
      await this.guard(() => this.admission.record(this.ticket));
      this.recorded = true;
    } catch (error) {
      this.refund();
      throw error;
    }
  }

  /** Gives the tokens back when they were charged and not recorded; best effort, never throws. */
  refund(onError: (error: unknown) => void = () => undefined): void {
    if (!this.admitted || this.recorded) return;
    this.admitted = false;
    this.admission.refund(this.ticket).catch(onError);
  }

  private async guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch {
      throw new ProblemError(
        'authorization_unavailable',
        'The authorization service cannot settle this request now; retry after the retry-after seconds.',
        { 'retry-after': String(this.retryAfterSeconds) },
      );
    }
  }

  private retryAfter(outcome: AdmitOutcome): Record<string, string> {
    return outcome.kind === 'over_limit' ? { 'retry-after': String(Math.max(1, Math.ceil(outcome.retryAfterMs / 1000))) } : {};
  }
}

function tokenHeaders(outcome: AdmitOutcome): Record<string, string> {
  const remaining = outcome.kind === 'too_large' ? outcome.tpm : outcome.tokensRemaining;
  return { 'x-ratelimit-limit-tokens': String(outcome.tpm), 'x-ratelimit-remaining-tokens': String(remaining) };
}

function tokenRefusal(outcome: Exclude<AdmitOutcome, { kind: 'admitted' }>, tokens: number, headers: Record<string, string>): ProblemError {
  if (outcome.kind === 'too_large') {
    return new ProblemError(
      'invalid_request',
      `This request has ${tokens} tokens, more than the organization's whole tokens-per-minute limit (${outcome.tpm}) for this model; no wait will admit it: split it into smaller requests.`,
      headers,
    );
  }
  return new ProblemError(
    'rate_limit_exceeded',
    `The organization's tokens-per-minute limit (${outcome.tpm}) for this model cannot take this request's ${tokens} tokens now.`,
    headers,
  );
}
