/**
 * What authz takes on, and in what order. At most `maxInFlight` Checks are held (deciding or
 * waiting); past that a Check is answered UNAVAILABLE at once (Envoy's 503 with retry-after)
 * instead of queueing past Envoy's deadline, where it would cost the same work and help nobody.
 * Of those held, at most CONCURRENT_CHECKS are decided at once and the rest wait in arrival
 * order. Without that, a burst is decided in lockstep: every Check takes its turn at each Redis
 * round trip, so all of them finish together at the end, and when a CPU limit stretches that end
 * past the deadline the whole burst fails as one (measured: 120 × 503 at 150m on a loaded
 * machine). In order, the first Checks are answered first, and only those that cannot be
 * reached in time fail. A Check whose deadline passed while it waited (or whose caller cancelled
 * it) does no work at all: it neither spends CPU the Checks still in time need, nor takes a
 * rate-limit slot for an answer no one reads. Envoy's circuit breaker (AUTHZ_MAX_CHECKS,
 * envoy/render.ts) bounds Checks before they reach authz; this bound holds for every other
 * caller too (several gateways, a mesh's ingress).
 */
import * as grpc from '@grpc/grpc-js';

/**
 * Checks decided at once: enough that one Redis round trip serves many (the single-flight key
 * lookup and budget read, the rate-limit scripts sent together), few enough that a burst is
 * answered in waves, in order. At a steady few hundred Checks/s about one is in flight.
 */
const CONCURRENT_CHECKS = 16;

/** Past the bound or the deadline: the same answer Envoy's own breaker gives, a fast 503 with retry-after. */
const OVERLOADED = { code: grpc.status.UNAVAILABLE, details: 'authorization overloaded' };

type Call<Req, Res> = grpc.ServerUnaryCall<Req, Res>;

/** `handler`, holding at most `maxInFlight` calls, deciding CONCURRENT_CHECKS at once in arrival order. */
export function admitChecks<Req, Res>(
  handler: grpc.handleUnaryCall<Req, Res>,
  maxInFlight: number,
  concurrency = CONCURRENT_CHECKS,
): grpc.handleUnaryCall<Req, Res> {
  let deciding = 0;
  const waiting: Array<{ call: Call<Req, Res>; callback: grpc.sendUnaryData<Res> }> = [];
  // Starts waiting Checks, oldest first, while there is room; those whose caller gave up are
  // answered without work.
  const pump = (): void => {
    while (deciding < concurrency && waiting.length > 0) {
      const { call, callback } = waiting.shift()!;
      if (gaveUp(call)) {
        callback(OVERLOADED);
        continue;
      }
      deciding += 1;
      handler(call, (error, value, trailer, flags) => {
        deciding -= 1;
        callback(error, value, trailer, flags);
        pump();
      });
    }
  };
  return (call, callback) => {
    if (deciding + waiting.length >= maxInFlight || gaveUp(call)) {
      callback(OVERLOADED);
      return;
    }
    waiting.push({ call, callback });
    pump();
  };
}

/** The caller will not read the answer: cancelled, or its deadline (wall-clock, as grpc sets it) passed. */
function gaveUp(call: Call<unknown, unknown>): boolean {
  if (call.cancelled) return true;
  const deadline = call.getDeadline();
  return (deadline instanceof Date ? deadline.getTime() : deadline) <= Date.now();
}
