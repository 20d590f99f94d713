// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/address.proto

import type { SocketAddress as _envoy_config_core_v3_SocketAddress, SocketAddress__Output as _envoy_config_core_v3_SocketAddress__Output } from '../../../../envoy/config/core/v3/SocketAddress.js';
import type { BoolValue as _google_protobuf_BoolValue, BoolValue__Output as _google_protobuf_BoolValue__Output } from '../../../../google/protobuf/BoolValue.js';
import type { SocketOption as _envoy_config_core_v3_SocketOption, SocketOption__Output as _envoy_config_core_v3_SocketOption__Output } from '../../../../envoy/config/core/v3/SocketOption.js';
import type { ExtraSourceAddress as _envoy_config_core_v3_ExtraSourceAddress, ExtraSourceAddress__Output as _envoy_config_core_v3_ExtraSourceAddress__Output } from '../../../../envoy/config/core/v3/ExtraSourceAddress.js';
import type { TypedExtensionConfig as _envoy_config_core_v3_TypedExtensionConfig, TypedExtensionConfig__Output as _envoy_config_core_v3_TypedExtensionConfig__Output } from '../../../../envoy/config/core/v3/TypedExtensionConfig.js';

export interface BindConfig {
  'source_address'?: (_envoy_config_core_v3_SocketAddress | null);
  'freebind'?: (_google_protobuf_BoolValue | null);
  'socket_options'?: (_envoy_config_core_v3_SocketOption)[];
  'additional_source_addresses'?: (_envoy_config_core_v3_SocketAddress)[];
  'extra_source_addresses'?: (_envoy_config_core_v3_ExtraSourceAddress)[];
  'local_address_selector'?: (_envoy_config_core_v3_TypedExtensionConfig | null);
}

export interface BindConfig__Output {
  'source_address': (_envoy_config_core_v3_SocketAddress__Output | null);
  'freebind': (_google_protobuf_BoolValue__Output | null);
  'socket_options': (_envoy_config_core_v3_SocketOption__Output)[];
  'additional_source_addresses': (_envoy_config_core_v3_SocketAddress__Output)[];
  'extra_source_addresses': (_envoy_config_core_v3_ExtraSourceAddress__Output)[];
  'local_address_selector': (_envoy_config_core_v3_TypedExtensionConfig__Output | null);
}
