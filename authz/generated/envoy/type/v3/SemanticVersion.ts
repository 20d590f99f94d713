// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/type/v3/semantic_version.proto


export interface SemanticVersion {
  'major_number'?: (number);
  'minor_number'?: (number);
  'patch'?: (number);
}

export interface SemanticVersion__Output {
  'major_number': (number);
  'minor_number': (number);
  'patch': (number);
}
