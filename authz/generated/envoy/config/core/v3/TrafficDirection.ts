// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/config/core/v3/base.proto

export const TrafficDirection = {
  UNSPECIFIED: 'UNSPECIFIED',
  INBOUND: 'INBOUND',
  OUTBOUND: 'OUTBOUND',
} as const;

export type TrafficDirection =
  | 'UNSPECIFIED'
  | 0
  | 'INBOUND'
  | 1
  | 'OUTBOUND'
  | 2

export type TrafficDirection__Output = typeof TrafficDirection[keyof typeof TrafficDirection]
