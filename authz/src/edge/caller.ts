/**
 * Who may call authz's gRPC services: only the gateway's Envoy, which sends a shared secret as
 * gRPC metadata on every Check (ext_authz `grpc_service.initial_metadata`, rendered by
 * envoy/render.ts from AUTHZ_CALLER_TOKEN_FILE). Any other caller is UNAUTHENTICATED before
 * any work is done: no parsing of its request, no Redis, no log line per call, one counter
 * increment (authz_callers_refused_total; a flood of refused calls must stay cheap). grpc.health.v1 stays open: the Kubernetes gRPC
 * probe cannot send metadata, and serving status reveals nothing.
 *
 * Why a token rather than mTLS (both are on the table: `make certs` has a CA): the issue's
 * budget is about 2 ms of CPU per request for the whole path, and Envoy keeps one long-lived
 * HTTP/2 connection to authz. A token costs one metadata lookup and a 32-byte constant-time
 * compare per Check (well under a microsecond; HPACK sends the repeated header as an index),
 * while TLS on that connection adds record encryption and decryption of every Check and its
 * answer in Node's TLS stack on authz's one event-loop thread, plus certificate issue and
 * rotation for every replica. What the token does not give, mTLS would not either inside one
 * pod's network: both only prove the caller holds a secret the stack handed out.
 */
import * as grpc from '@grpc/grpc-js';
import { acceptedDigests, matchesAnyDigest, secretDigest } from '../../../contract/bearer.js';
import { AUTHZ_CALLER_METADATA } from '../../../contract/headers.js';
import type { SecretValues } from '../../../contract/secrets.js';

/** True when `metadata` carries one of `expected` (digests) as the caller token; constant time. */
export function callerTokenMatches(metadata: grpc.Metadata, expected: readonly Buffer[]): boolean {
  const values = metadata.get(AUTHZ_CALLER_METADATA);
  if (values.length !== 1) return false;
  const value = values[0];
  // Digests have a fixed length, so neither the compare's time nor its early exit on a length
  // difference tells a caller anything about the token.
  return matchesAnyDigest(secretDigest(typeof value === 'string' ? value : value!.toString('utf8')), expected);
}

/**
 * `handler`, answering UNAUTHENTICATED at once to a call without an accepted caller token (two
 * during a rotation: Envoy may send the old or the new one; contract/secrets.ts).
 */
export function requireCaller<Req, Res>(
  handler: grpc.handleUnaryCall<Req, Res>,
  token: SecretValues,
  onRefused: () => void = () => undefined,
): grpc.handleUnaryCall<Req, Res> {
  const expected = acceptedDigests(token, (value) => value);
  return (call, callback) => {
    if (!callerTokenMatches(call.metadata, expected())) {
      onRefused();
      callback({ code: grpc.status.UNAUTHENTICATED, details: 'caller not authenticated' });
      return;
    }
    handler(call, callback);
  };
}
