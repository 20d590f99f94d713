// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/service/auth/v3/external_auth.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CheckRequest as _envoy_service_auth_v3_CheckRequest, CheckRequest__Output as _envoy_service_auth_v3_CheckRequest__Output } from '../../../../envoy/service/auth/v3/CheckRequest.js';
import type { CheckResponse as _envoy_service_auth_v3_CheckResponse, CheckResponse__Output as _envoy_service_auth_v3_CheckResponse__Output } from '../../../../envoy/service/auth/v3/CheckResponse.js';

export interface AuthorizationClient extends grpc.Client {
  Check(argument: _envoy_service_auth_v3_CheckRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  Check(argument: _envoy_service_auth_v3_CheckRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  Check(argument: _envoy_service_auth_v3_CheckRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  Check(argument: _envoy_service_auth_v3_CheckRequest, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  check(argument: _envoy_service_auth_v3_CheckRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  check(argument: _envoy_service_auth_v3_CheckRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  check(argument: _envoy_service_auth_v3_CheckRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  check(argument: _envoy_service_auth_v3_CheckRequest, callback: grpc.requestCallback<_envoy_service_auth_v3_CheckResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface AuthorizationHandlers extends grpc.UntypedServiceImplementation {
  Check: grpc.handleUnaryCall<_envoy_service_auth_v3_CheckRequest__Output, _envoy_service_auth_v3_CheckResponse>;
  
}

export interface AuthorizationDefinition extends grpc.ServiceDefinition {
  Check: MethodDefinition<_envoy_service_auth_v3_CheckRequest, _envoy_service_auth_v3_CheckResponse, _envoy_service_auth_v3_CheckRequest__Output, _envoy_service_auth_v3_CheckResponse__Output>
}
