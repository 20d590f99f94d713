/**
 * What authz takes on: at most `maxInFlight` Checks at once, and none whose caller has already
 * given up. A Check past the bound is answered UNAVAILABLE at once (Envoy's 503 with
 * retry-after) instead of queueing behind the others past Envoy's deadline, where it would
 * cost the same work and help nobody; a Check whose deadline passed while it waited to be read
 * (a CPU-limited authz reads a burst slowly) does no work at all, so it neither spends CPU the
 * Checks still in time need nor takes a rate-limit slot for an answer no one reads. Envoy's
 * circuit breaker (AUTHZ_MAX_CHECKS, envoy/render.ts) bounds Checks before they reach authz; this
 * bound holds for every other caller too (several gateways, a mesh's ingress).
 */
import * as grpc from '@grpc/grpc-js';

/** Past the bound: the same answer Envoy's own breaker gives, a fast 503 with retry-after. */
const OVERLOADED = { code: grpc.status.UNAVAILABLE, details: 'authorization overloaded' };

/** `handler`, taking at most `maxInFlight` calls at once and none already past its deadline. */
export function admitChecks<Req, Res>(handler: grpc.handleUnaryCall<Req, Res>, maxInFlight: number): grpc.handleUnaryCall<Req, Res> {
  let inFlight = 0;
  return (call, callback) => {
    // Wall-clock time, as the deadline is: not the injected clock policy decisions use.
    if (inFlight >= maxInFlight || call.cancelled || deadlineOf(call) <= Date.now()) {
      callback(OVERLOADED);
      return;
    }
    inFlight += 1;
    handler(call, (error, value, trailer, flags) => {
      inFlight -= 1;
      callback(error, value, trailer, flags);
    });
  };
}

/** The call's deadline in epoch milliseconds (Infinity when the caller set none). */
function deadlineOf(call: grpc.ServerUnaryCall<unknown, unknown>): number {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : deadline;
}
