// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/service/accesslog/v3/als.proto


export interface StreamAccessLogsResponse {
}

export interface StreamAccessLogsResponse__Output {
}
