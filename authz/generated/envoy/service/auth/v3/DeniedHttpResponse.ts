// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/service/auth/v3/external_auth.proto

import type { HttpStatus as _envoy_type_v3_HttpStatus, HttpStatus__Output as _envoy_type_v3_HttpStatus__Output } from '../../../../envoy/type/v3/HttpStatus.js';
import type { HeaderValueOption as _envoy_config_core_v3_HeaderValueOption, HeaderValueOption__Output as _envoy_config_core_v3_HeaderValueOption__Output } from '../../../../envoy/config/core/v3/HeaderValueOption.js';

export interface DeniedHttpResponse {
  'status'?: (_envoy_type_v3_HttpStatus | null);
  'headers'?: (_envoy_config_core_v3_HeaderValueOption)[];
  'body'?: (string);
}

export interface DeniedHttpResponse__Output {
  'status': (_envoy_type_v3_HttpStatus__Output | null);
  'headers': (_envoy_config_core_v3_HeaderValueOption__Output)[];
  'body': (string);
}
