/**
 * The `envoy.service.auth.v3.Authorization/Check` handler: reads what Envoy sends (headers and
 * path only: Envoy asks before it reads any body, and a mesh's Envoy sends the same), asks
 * policy and the store, and answers with an allowed or denied CheckResponse. A store fault becomes gRPC UNAVAILABLE,
 * which Envoy (fail closed) turns into 503 `authorization_unavailable`; nothing passes unchecked.
 *
 * A lookup shed by the key cache (too many unknown key ids in flight: a junk-key flood) is
 * UNAVAILABLE too, answered at once without Redis: a fast 503 with retry-after, not a 401,
 * because the id may be a real key this replica has not seen yet, and a client retries a 503
 * but gives up on a 401. Known keys are never shed (key-cache.ts).
 */
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { CheckRequest__Output } from '../../generated/envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse } from '../../generated/envoy/service/auth/v3/CheckResponse.js';
import type { _envoy_service_auth_v3_AttributeContext_HttpRequest__Output as HttpAttributes } from '../../generated/envoy/service/auth/v3/AttributeContext.js';
import type { AuthzConfig } from '../config.js';
import { allowed, denied, rateLimited } from './check-response.js';
import { budgetRefusal } from '../../../contract/budget.js';
import { signGrant } from '../../../contract/grant.js';
import { GATEWAY_HEADER_PREFIX } from '../../../contract/headers.js';
import { KeyLookupShedError, type KeyCache } from '../store/key-cache.js';
import { decideAccess, endpointOf } from '../policy/access.js';
import { isDeny } from '../policy/decision.js';
import { parseAuthorization } from '../policy/keys.js';
import { limitsFor } from '../policy/limits.js';
import { StoreUnavailableError, type RedisStore } from '../store/redis.js';

export interface CheckDeps {
  readonly config: Pick<
    AuthzConfig,
    'keyPrefix' | 'keyHashSecret' | 'modelId' | 'defaultRpm' | 'defaultTpm' | 'grantSecret' | 'grantTtlMs'
  >;
  readonly store: Pick<RedisStore, 'lookupKey' | 'checkLimits'>;
  readonly clock: () => number;
  readonly log: Logger;
  /** Key lookups cached for KEY_CACHE_TTL_MS; never rate limits. */
  readonly keyCache: KeyCache;
}

/** Decides one CheckRequest; denials are values, store faults throw StoreUnavailableError. */
async function decide(request: CheckRequest__Output, deps: CheckDeps): Promise<CheckResponse> {
  const http = request.attributes?.request?.http;
  const presented = parseAuthorization(headerOf(http, 'authorization'), deps.config.keyPrefix);
  if (isDeny(presented)) return denied(presented);
  // Read before the lookup, so a cached entry's age counts from before Redis was asked.
  const now = deps.clock();
  const { key, org } = await deps.keyCache.lookup(presented.id, now, (id) => deps.store.lookupKey(id));
  const access = decideAccess({
    presented,
    key,
    org,
    endpoint: endpointOf(http?.path ?? ''),
    servedModel: deps.config.modelId,
    serverSecret: deps.config.keyHashSecret,
    now,
  });
  if (isDeny(access)) return denied(access);
  const limits = limitsFor(access.org, { rpm: deps.config.defaultRpm, tpm: deps.config.defaultTpm });
  // A fresh uid per Check: the grant record the embedder admits and records once
  // (contract/redis/settlement.lua), written in the same round trip as the limits and budget.
  const claims = {
    org: access.org.id,
    key: access.keyId,
    model: access.modelEnabled ? access.model : '',
    tpm: limits.tpm,
    uid: randomUUID(),
    exp: now + deps.config.grantTtlMs,
    method: http?.method ?? '',
    path: http?.path ?? '',
  };
  const draft = { ...claims, grantedModel: claims.model };
  const outcome = await deps.store.checkLimits(draft, access.model, now, limits);
  if (outcome.budget) {
    const deny = budgetRefusal(outcome.budget.monthlyTokens, outcome.budget.usedTokens, now);
    return denied(deny, { 'retry-after': String(deny.retryAfterSeconds) });
  }
  if (!outcome.allowed) return rateLimited(outcome);
  return allowed(access, outcome, signGrant(claims, deps.config.grantSecret.current), gatewayHeadersIn(http));
}

/** The Check handler for the gRPC server. */
export function createCheckHandler(deps: CheckDeps): grpc.handleUnaryCall<CheckRequest__Output, CheckResponse> {
  return (call, callback) => {
    decide(call.request, deps).then(
      (response) => {
        deps.log.debug({ event: 'check', code: response.status?.message || 'ok' }, 'check decided');
        callback(null, response);
      },
      (error: unknown) => {
        if (error instanceof KeyLookupShedError) {
          // Not logged per call: a flood would turn into a log flood; authz_key_cache_lookups_total{result="shed"} counts them.
          callback({ code: grpc.status.UNAVAILABLE, details: 'authorization overloaded' });
        } else if (error instanceof StoreUnavailableError) {
          deps.log.warn({ event: 'check_unavailable', reason: error.message }, 'redis unavailable; failing closed');
          callback({ code: grpc.status.UNAVAILABLE, details: 'authorization store unavailable' });
        } else {
          deps.log.error({ event: 'check_failed', err: error }, 'check failed');
          callback({ code: grpc.status.INTERNAL, details: 'authorization failed' });
        }
      },
    );
  };
}

// Envoy sends lower-cased headers in `headers`, or in `header_map` when encode_raw_headers is on.
function headerOf(http: HttpAttributes | null | undefined, name: string): string | undefined {
  if (!http) return undefined;
  const value = http.headers?.[name];
  if (value !== undefined) return value;
  const raw = http.header_map?.headers?.find((h) => h.key.toLowerCase() === name);
  if (!raw) return undefined;
  return raw.value || Buffer.from(raw.raw_value ?? '').toString('utf8');
}

/** Client-sent `x-gateway-*` header names: only authz may set those, so it removes them all. */
function gatewayHeadersIn(http: HttpAttributes | null | undefined): string[] {
  const names = [...Object.keys(http?.headers ?? {}), ...(http?.header_map?.headers ?? []).map((h) => h.key.toLowerCase())];
  return [...new Set(names.filter((name) => name.startsWith(GATEWAY_HEADER_PREFIX)))];
}
