// Original file: node_modules/@grpc/grpc-js-xds/deps/protoc-gen-validate/validate/validate.proto

export const KnownRegex = {
  UNKNOWN: 'UNKNOWN',
  HTTP_HEADER_NAME: 'HTTP_HEADER_NAME',
  HTTP_HEADER_VALUE: 'HTTP_HEADER_VALUE',
} as const;

export type KnownRegex =
  | 'UNKNOWN'
  | 0
  | 'HTTP_HEADER_NAME'
  | 1
  | 'HTTP_HEADER_VALUE'
  | 2

export type KnownRegex__Output = typeof KnownRegex[keyof typeof KnownRegex]
