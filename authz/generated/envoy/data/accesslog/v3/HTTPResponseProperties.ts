// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/data/accesslog/v3/accesslog.proto

import type { UInt32Value as _google_protobuf_UInt32Value, UInt32Value__Output as _google_protobuf_UInt32Value__Output } from '../../../../google/protobuf/UInt32Value.js';
import type { Long } from '@grpc/proto-loader';

export interface HTTPResponseProperties {
  'response_code'?: (_google_protobuf_UInt32Value | null);
  'response_headers_bytes'?: (number | string | Long);
  'response_body_bytes'?: (number | string | Long);
  'response_headers'?: ({[key: string]: string});
  'response_trailers'?: ({[key: string]: string});
  'response_code_details'?: (string);
  'upstream_header_bytes_received'?: (number | string | Long);
  'downstream_header_bytes_sent'?: (number | string | Long);
}

export interface HTTPResponseProperties__Output {
  'response_code': (_google_protobuf_UInt32Value__Output | null);
  'response_headers_bytes': (string);
  'response_body_bytes': (string);
  'response_headers': ({[key: string]: string});
  'response_trailers': ({[key: string]: string});
  'response_code_details': (string);
  'upstream_header_bytes_received': (string);
  'downstream_header_bytes_sent': (string);
}
