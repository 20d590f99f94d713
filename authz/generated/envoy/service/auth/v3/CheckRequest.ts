// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/service/auth/v3/external_auth.proto

import type { AttributeContext as _envoy_service_auth_v3_AttributeContext, AttributeContext__Output as _envoy_service_auth_v3_AttributeContext__Output } from '../../../../envoy/service/auth/v3/AttributeContext.js';

export interface CheckRequest {
  'attributes'?: (_envoy_service_auth_v3_AttributeContext | null);
}

export interface CheckRequest__Output {
  'attributes': (_envoy_service_auth_v3_AttributeContext__Output | null);
}
