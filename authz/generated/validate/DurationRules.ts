// Original file: node_modules/@grpc/grpc-js-xds/deps/protoc-gen-validate/validate/validate.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../google/protobuf/Duration.js';

export interface DurationRules {
  'required'?: (boolean);
  'const'?: (_google_protobuf_Duration | null);
  'lt'?: (_google_protobuf_Duration | null);
  'lte'?: (_google_protobuf_Duration | null);
  'gt'?: (_google_protobuf_Duration | null);
  'gte'?: (_google_protobuf_Duration | null);
  'in'?: (_google_protobuf_Duration)[];
  'not_in'?: (_google_protobuf_Duration)[];
}

export interface DurationRules__Output {
  'required': (boolean);
  'const': (_google_protobuf_Duration__Output | null);
  'lt': (_google_protobuf_Duration__Output | null);
  'lte': (_google_protobuf_Duration__Output | null);
  'gt': (_google_protobuf_Duration__Output | null);
  'gte': (_google_protobuf_Duration__Output | null);
  'in': (_google_protobuf_Duration__Output)[];
  'not_in': (_google_protobuf_Duration__Output)[];
}
