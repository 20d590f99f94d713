// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/socket_option.proto

import type { SocketOption as _envoy_config_core_v3_SocketOption, SocketOption__Output as _envoy_config_core_v3_SocketOption__Output } from '../../../../envoy/config/core/v3/SocketOption.js';

export interface SocketOptionsOverride {
  'socket_options'?: (_envoy_config_core_v3_SocketOption)[];
}

export interface SocketOptionsOverride__Output {
  'socket_options': (_envoy_config_core_v3_SocketOption__Output)[];
}
