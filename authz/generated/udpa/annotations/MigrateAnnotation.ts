// Original file: node_modules/@grpc/grpc-js-xds/deps/xds/udpa/annotations/migrate.proto


export interface MigrateAnnotation {
  'rename'?: (string);
}

export interface MigrateAnnotation__Output {
  'rename': (string);
}
