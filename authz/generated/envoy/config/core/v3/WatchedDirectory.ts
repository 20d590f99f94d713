// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/base.proto


export interface WatchedDirectory {
  'path'?: (string);
}

export interface WatchedDirectory__Output {
  'path': (string);
}
