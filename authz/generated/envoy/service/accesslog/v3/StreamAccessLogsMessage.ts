// Original file: node_modules/@grpc/grpc-js-xds/deps/envoy-api/envoy/service/accesslog/v3/als.proto

import type { Node as _envoy_config_core_v3_Node, Node__Output as _envoy_config_core_v3_Node__Output } from '../../../../envoy/config/core/v3/Node.js';
import type { HTTPAccessLogEntry as _envoy_data_accesslog_v3_HTTPAccessLogEntry, HTTPAccessLogEntry__Output as _envoy_data_accesslog_v3_HTTPAccessLogEntry__Output } from '../../../../envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import type { TCPAccessLogEntry as _envoy_data_accesslog_v3_TCPAccessLogEntry, TCPAccessLogEntry__Output as _envoy_data_accesslog_v3_TCPAccessLogEntry__Output } from '../../../../envoy/data/accesslog/v3/TCPAccessLogEntry.js';

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries {
  'log_entry'?: (_envoy_data_accesslog_v3_HTTPAccessLogEntry)[];
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries__Output {
  'log_entry': (_envoy_data_accesslog_v3_HTTPAccessLogEntry__Output)[];
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier {
  'node'?: (_envoy_config_core_v3_Node | null);
  'log_name'?: (string);
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier__Output {
  'node': (_envoy_config_core_v3_Node__Output | null);
  'log_name': (string);
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_TCPAccessLogEntries {
  'log_entry'?: (_envoy_data_accesslog_v3_TCPAccessLogEntry)[];
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_TCPAccessLogEntries__Output {
  'log_entry': (_envoy_data_accesslog_v3_TCPAccessLogEntry__Output)[];
}

export interface StreamAccessLogsMessage {
  'identifier'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier | null);
  'http_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries | null);
  'tcp_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_TCPAccessLogEntries | null);
  'log_entries'?: "http_logs"|"tcp_logs";
}

export interface StreamAccessLogsMessage__Output {
  'identifier': (_envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier__Output | null);
  'http_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries__Output | null);
  'tcp_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_TCPAccessLogEntries__Output | null);
  'log_entries'?: "http_logs"|"tcp_logs";
}
