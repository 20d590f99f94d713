// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/base.proto

import type { WatchedDirectory as _envoy_config_core_v3_WatchedDirectory, WatchedDirectory__Output as _envoy_config_core_v3_WatchedDirectory__Output } from '../../../../envoy/config/core/v3/WatchedDirectory.js';

export interface DataSource {
  'filename'?: (string);
  'inline_bytes'?: (Buffer | Uint8Array | string);
  'inline_string'?: (string);
  'environment_variable'?: (string);
  'watched_directory'?: (_envoy_config_core_v3_WatchedDirectory | null);
  'specifier'?: "filename"|"inline_bytes"|"inline_string"|"environment_variable";
}

export interface DataSource__Output {
  'filename'?: (string);
  'inline_bytes'?: (Buffer);
  'inline_string'?: (string);
  'environment_variable'?: (string);
  'watched_directory': (_envoy_config_core_v3_WatchedDirectory__Output | null);
  'specifier'?: "filename"|"inline_bytes"|"inline_string"|"environment_variable";
}
