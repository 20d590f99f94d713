// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/extension.proto

import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from '../../../../google/protobuf/Any.js';

export interface TypedExtensionConfig {
  'name'?: (string);
  'typed_config'?: (_google_protobuf_Any | null);
}

export interface TypedExtensionConfig__Output {
  'name': (string);
  'typed_config': (_google_protobuf_Any__Output | null);
}
