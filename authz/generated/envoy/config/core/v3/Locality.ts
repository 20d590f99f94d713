// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/base.proto


export interface Locality {
  'region'?: (string);
  'zone'?: (string);
  'sub_zone'?: (string);
}

export interface Locality__Output {
  'region': (string);
  'zone': (string);
  'sub_zone': (string);
}
