/**
 * The embedder's client of authz's Admission service (authz/proto/ctg/admission/v1): the only
 * module of the embedder that talks to authz. Admit and Refund are one call each; Record is
 * retried a few times within its bound (it is idempotent by admission id), because a 200 must
 * not leave without its usage record. Any call that cannot get an answer throws
 * AdmissionUnavailableError and the request fails closed.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { context, propagation } from '@opentelemetry/api';
import type { ProtoGrpcType } from '../../authz/generated/admission.js';
import type { AdmissionClient as GrpcAdmissionClient } from '../../authz/generated/ctg/admission/v1/Admission.js';
import type { Ticket } from '../../authz/generated/ctg/admission/v1/Ticket.js';

const PROTO = fileURLToPath(new URL('../../authz/proto/ctg/admission/v1/admission.proto', import.meta.url));

/** What the embedder tells authz about one request: ids and counts, never text. */
export interface AdmissionTicket {
  readonly admissionId: string;
  readonly org: string;
  readonly keyId: string;
  readonly model: string;
  readonly requestId: string;
  readonly tokens: number;
}

/** Admit's answer; refusals are values. */
export type AdmitOutcome =
  | { readonly kind: 'admitted'; readonly tpm: number; readonly tokensRemaining: number }
  | { readonly kind: 'over_limit'; readonly tpm: number; readonly tokensRemaining: number; readonly retryAfterMs: number }
  | { readonly kind: 'too_large'; readonly tpm: number };

/** authz could not be asked or did not answer in time. */
export class AdmissionUnavailableError extends Error {
  constructor(call: string, cause: unknown) {
    super(`admission ${call} failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'AdmissionUnavailableError';
  }
}

export interface Admission {
  admit(ticket: AdmissionTicket): Promise<AdmitOutcome>;
  /** Resolves once the usage is recorded (now or by an earlier attempt). */
  record(ticket: AdmissionTicket): Promise<void>;
  refund(ticket: AdmissionTicket): Promise<void>;
  close(): void;
}

export interface AdmissionOptions {
  /** host:port of authz. */
  readonly address: string;
  /** Deadline of one call. */
  readonly timeoutMs: number;
  /** Tries of Record before giving up (at least 1). */
  readonly recordAttempts: number;
}

/** Connects (lazily) to authz's Admission service. */
export function createAdmissionClient(options: AdmissionOptions): Admission {
  const definition = loadSync(PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  // A target may list several replicas (`ipv4:a:9191,b:9191`): calls are spread over those that
  // answer, and a Record retried after one replica died goes to another.
  const channelOptions = { 'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }) };
  const client = new loaded.ctg.admission.v1.Admission(options.address, grpc.credentials.createInsecure(), channelOptions) as GrpcAdmissionClient;
  const call = <Res>(name: 'Admit' | 'Record' | 'Refund', ticket: AdmissionTicket): Promise<Res> =>
    new Promise((resolve, reject) => {
      const request = { ticket: toProto(ticket) };
      const deadline = { deadline: Date.now() + options.timeoutMs };
      // The request's trace continues in authz (traceparent); a no-op while tracing is off.
      const metadata = new grpc.Metadata();
      propagation.inject(context.active(), metadata, { set: (carrier, key, value) => carrier.set(key, value) });
      const done = (error: grpc.ServiceError | null, response?: unknown): void =>
        error || !response ? reject(new AdmissionUnavailableError(name, error)) : resolve(response as Res);
      if (name === 'Admit') client.Admit(request, metadata, deadline, done);
      else if (name === 'Record') client.Record(request, metadata, deadline, done);
      else client.Refund(request, metadata, deadline, done);
    });
  return {
    async admit(ticket) {
      const reply = await call<{ outcome: string; tpm: number; tokens_remaining: number; retry_after_ms: number }>('Admit', ticket);
      if (reply.outcome === 'ADMITTED') return { kind: 'admitted', tpm: reply.tpm, tokensRemaining: reply.tokens_remaining };
      if (reply.outcome === 'OVER_LIMIT') return { kind: 'over_limit', tpm: reply.tpm, tokensRemaining: reply.tokens_remaining, retryAfterMs: reply.retry_after_ms };
      return { kind: 'too_large', tpm: reply.tpm };
    },
    async record(ticket) {
      let lastError: unknown;
      for (let attempt = 1; attempt <= Math.max(1, options.recordAttempts); attempt++) {
        try {
          await call('Record', ticket);
          return;
        } catch (error) {
          lastError = error;
          await new Promise((r) => setTimeout(r, 100 * attempt));
        }
      }
      throw lastError;
    },
    async refund(ticket) {
      await call('Refund', ticket);
    },
    close: () => client.close(),
  };
}

function toProto(ticket: AdmissionTicket): Ticket {
  return {
    admission_id: ticket.admissionId, org: ticket.org, key_id: ticket.keyId, model: ticket.model,
    request_id: ticket.requestId, tokens: ticket.tokens,
  };
}
