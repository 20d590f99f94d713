/**
 * The standard gRPC health service (grpc.health.v1.Health). authz is SERVING while its Redis
 * connection is up: without Redis every Check would be UNAVAILABLE anyway.
 */
import * as grpc from '@grpc/grpc-js';
import type { HealthCheckRequest__Output } from '../../generated/grpc/health/v1/HealthCheckRequest.js';
import type {
  HealthCheckResponse,
  _grpc_health_v1_HealthCheckResponse_ServingStatus as ServingStatus,
} from '../../generated/grpc/health/v1/HealthCheckResponse.js';
import type { HealthHandlers } from '../../generated/grpc/health/v1/Health.js';
import type { RedisStore } from '../store/redis.js';

/** Service names the health service answers for; '' is the whole server. */
const HEALTH_SERVICES = ['', 'envoy.service.auth.v3.Authorization'];

type ReadySource = Pick<RedisStore, 'isReady' | 'onReadyChange'>;

/** Health handlers reporting the store's connection state. */
export function createHealthHandlers(store: ReadySource, isDraining: () => boolean = () => false): HealthHandlers {
  // A draining authz says NOT_SERVING so Envoy's health checks move Checks to the other replicas
  // before it stops listening (authz/src/main.ts).
  const statusOf = (ready: boolean): ServingStatus => (ready && !isDraining() ? 'SERVING' : 'NOT_SERVING');
  return {
    Check(call: grpc.ServerUnaryCall<HealthCheckRequest__Output, HealthCheckResponse>, callback: grpc.sendUnaryData<HealthCheckResponse>) {
      if (!HEALTH_SERVICES.includes(call.request.service)) {
        callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
        return;
      }
      callback(null, { status: statusOf(store.isReady()) });
    },
    Watch(call: grpc.ServerWritableStream<HealthCheckRequest__Output, HealthCheckResponse>) {
      if (!HEALTH_SERVICES.includes(call.request.service)) {
        call.write({ status: 'SERVICE_UNKNOWN' });
        return;
      }
      let last = statusOf(store.isReady());
      call.write({ status: last });
      const unsubscribe = store.onReadyChange((ready) => {
        const next = statusOf(ready);
        if (next === last) return;
        last = next;
        call.write({ status: next });
      });
      call.on('cancelled', unsubscribe);
      call.on('close', unsubscribe);
    },
  };
}
