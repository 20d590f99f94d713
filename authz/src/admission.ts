/**
 * The `ctg.admission.v1.Admission` handlers the embedder calls (authz/proto/ctg/admission/v1):
 * Admit charges a request's tokens atomically with the tokens-per-minute check before any model
 * work; Record writes its usage once, before its 200 leaves; Refund gives back the tokens of an
 * admitted request that will not be answered 200. A ticket names its key, and the key must
 * belong to the ticket's organization: the limits and usage are that organization's. Store
 * faults are UNAVAILABLE, and the embedder fails closed.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { AdmitRequest__Output } from '../generated/ctg/admission/v1/AdmitRequest.js';
import type { AdmitResponse } from '../generated/ctg/admission/v1/AdmitResponse.js';
import type { RecordRequest__Output } from '../generated/ctg/admission/v1/RecordRequest.js';
import type { RecordResponse } from '../generated/ctg/admission/v1/RecordResponse.js';
import type { RefundRequest__Output } from '../generated/ctg/admission/v1/RefundRequest.js';
import type { RefundResponse } from '../generated/ctg/admission/v1/RefundResponse.js';
import type { Ticket__Output } from '../generated/ctg/admission/v1/Ticket.js';
import type { AuthzConfig } from './config.js';
import type { KeyCache } from './key-cache.js';
import { limitsFor } from './policy/limits.js';
import { StoreUnavailableError, type RedisStore } from './store/redis.js';

export interface AdmissionDeps {
  readonly config: Pick<AuthzConfig, 'defaultRpm' | 'defaultTpm'>;
  readonly store: Pick<RedisStore, 'lookupKey' | 'admitTokens' | 'refundTokens' | 'recordUsage'>;
  readonly keyCache: KeyCache;
  readonly clock: () => number;
  readonly log: Logger;
}

/** A ticket that names no real key of its organization; never a client's fault, so never shown. */
class TicketError extends Error {}

const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:\/+=@-]{0,199}$/;
/** The gateway's request-id rule (envoy.yaml.tmpl). */
const REQUEST_ID = /^[A-Za-z0-9._:\/+=@-]{1,200}$/;
const MAX_TOKENS = 1_000 * 512;

interface Settled {
  readonly ticket: Ticket__Output;
  readonly tpm: number;
  readonly now: number;
}

/** Checks the ticket's shape and that its key belongs to its organization; returns that organization's tpm. */
async function settle(ticket: Ticket__Output | null, deps: AdmissionDeps): Promise<Settled> {
  if (!ticket) throw new TicketError('no ticket');
  const ids = [ticket.admission_id, ticket.org, ticket.key_id, ticket.model];
  const wellFormed = ids.every((id) => IDENTIFIER.test(id)) && REQUEST_ID.test(ticket.request_id);
  if (!wellFormed || !Number.isInteger(ticket.tokens) || ticket.tokens > MAX_TOKENS) {
    throw new TicketError('malformed ticket');
  }
  const now = deps.clock();
  const { key, org } = await deps.keyCache.lookup(ticket.key_id, now, (id) => deps.store.lookupKey(id));
  if (!key || !org || key.org !== ticket.org) throw new TicketError('the key does not belong to the organization');
  const limits = limitsFor(org, { rpm: deps.config.defaultRpm, tpm: deps.config.defaultTpm });
  return { ticket, tpm: limits.tpm, now };
}

/** Admit: all or nothing against the tokens-per-minute budget. */
async function admit(request: AdmitRequest__Output, deps: AdmissionDeps): Promise<AdmitResponse> {
  const { ticket, tpm, now } = await settle(request.ticket, deps);
  const decision = await deps.store.admitTokens(ticket.org, ticket.model, now, tpm, ticket.tokens);
  const outcome = decision.outcome === 'admitted' ? 'ADMITTED' : decision.outcome === 'over_limit' ? 'OVER_LIMIT' : 'TOO_LARGE';
  return { outcome, tpm, tokens_remaining: decision.tokensRemaining, retry_after_ms: decision.retryAfterMs };
}

/** Record: the usage record, once per admission. */
async function record(request: RecordRequest__Output, deps: AdmissionDeps): Promise<RecordResponse> {
  const { ticket, now } = await settle(request.ticket, deps);
  const usage = { org: ticket.org, keyId: ticket.key_id, model: ticket.model, requestId: ticket.request_id, tokens: ticket.tokens, time: now };
  return { recorded: await deps.store.recordUsage(usage, ticket.admission_id) };
}

/** Refund: the admitted tokens back to the budget. */
async function refund(request: RefundRequest__Output, deps: AdmissionDeps): Promise<RefundResponse> {
  const { ticket, tpm, now } = await settle(request.ticket, deps);
  await deps.store.refundTokens(ticket.org, ticket.model, now, tpm, ticket.tokens);
  return {};
}

/** Wraps one handler: answers, or maps a fault to a gRPC status (ids and counts only in logs). */
function unary<Req, Res>(name: string, run: (request: Req, deps: AdmissionDeps) => Promise<Res>, deps: AdmissionDeps): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    run(call.request, deps).then(
      (response) => callback(null, response),
      (error: unknown) => {
        if (error instanceof TicketError) {
          deps.log.warn({ event: 'admission_refused', call: name, reason: error.message }, 'admission ticket refused');
          callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
        } else if (error instanceof StoreUnavailableError) {
          deps.log.warn({ event: 'admission_unavailable', call: name, reason: error.message }, 'redis unavailable');
          callback({ code: grpc.status.UNAVAILABLE, details: 'authorization store unavailable' });
        } else {
          deps.log.error({ event: 'admission_failed', call: name, err: error }, 'admission failed');
          callback({ code: grpc.status.INTERNAL, details: 'admission failed' });
        }
      },
    );
  };
}

/** The Admission service's handlers for the gRPC server. */
export function createAdmissionHandlers(deps: AdmissionDeps): grpc.UntypedServiceImplementation {
  return {
    Admit: unary('Admit', admit, deps),
    Record: unary('Record', record, deps),
    Refund: unary('Refund', refund, deps),
  };
}
