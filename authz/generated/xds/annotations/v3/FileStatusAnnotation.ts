// Original file: node_modules/@grpc/grpc-js-xds/deps/xds/xds/annotations/v3/status.proto


export interface FileStatusAnnotation {
  'work_in_progress'?: (boolean);
}

export interface FileStatusAnnotation__Output {
  'work_in_progress': (boolean);
}
