// Original file: authz/proto/ctg/admission/v1/admission.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AdmitRequest as _ctg_admission_v1_AdmitRequest, AdmitRequest__Output as _ctg_admission_v1_AdmitRequest__Output } from '../../../ctg/admission/v1/AdmitRequest.js';
import type { AdmitResponse as _ctg_admission_v1_AdmitResponse, AdmitResponse__Output as _ctg_admission_v1_AdmitResponse__Output } from '../../../ctg/admission/v1/AdmitResponse.js';
import type { RecordRequest as _ctg_admission_v1_RecordRequest, RecordRequest__Output as _ctg_admission_v1_RecordRequest__Output } from '../../../ctg/admission/v1/RecordRequest.js';
import type { RecordResponse as _ctg_admission_v1_RecordResponse, RecordResponse__Output as _ctg_admission_v1_RecordResponse__Output } from '../../../ctg/admission/v1/RecordResponse.js';
import type { RefundRequest as _ctg_admission_v1_RefundRequest, RefundRequest__Output as _ctg_admission_v1_RefundRequest__Output } from '../../../ctg/admission/v1/RefundRequest.js';
import type { RefundResponse as _ctg_admission_v1_RefundResponse, RefundResponse__Output as _ctg_admission_v1_RefundResponse__Output } from '../../../ctg/admission/v1/RefundResponse.js';

export interface AdmissionClient extends grpc.Client {
  Admit(argument: _ctg_admission_v1_AdmitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  Admit(argument: _ctg_admission_v1_AdmitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  Admit(argument: _ctg_admission_v1_AdmitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  Admit(argument: _ctg_admission_v1_AdmitRequest, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  admit(argument: _ctg_admission_v1_AdmitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  admit(argument: _ctg_admission_v1_AdmitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  admit(argument: _ctg_admission_v1_AdmitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  admit(argument: _ctg_admission_v1_AdmitRequest, callback: grpc.requestCallback<_ctg_admission_v1_AdmitResponse__Output>): grpc.ClientUnaryCall;
  
  Record(argument: _ctg_admission_v1_RecordRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  Record(argument: _ctg_admission_v1_RecordRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  Record(argument: _ctg_admission_v1_RecordRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  Record(argument: _ctg_admission_v1_RecordRequest, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  record(argument: _ctg_admission_v1_RecordRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  record(argument: _ctg_admission_v1_RecordRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  record(argument: _ctg_admission_v1_RecordRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  record(argument: _ctg_admission_v1_RecordRequest, callback: grpc.requestCallback<_ctg_admission_v1_RecordResponse__Output>): grpc.ClientUnaryCall;
  
  Refund(argument: _ctg_admission_v1_RefundRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  Refund(argument: _ctg_admission_v1_RefundRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  Refund(argument: _ctg_admission_v1_RefundRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  Refund(argument: _ctg_admission_v1_RefundRequest, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  refund(argument: _ctg_admission_v1_RefundRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  refund(argument: _ctg_admission_v1_RefundRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  refund(argument: _ctg_admission_v1_RefundRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  refund(argument: _ctg_admission_v1_RefundRequest, callback: grpc.requestCallback<_ctg_admission_v1_RefundResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface AdmissionHandlers extends grpc.UntypedServiceImplementation {
  Admit: grpc.handleUnaryCall<_ctg_admission_v1_AdmitRequest__Output, _ctg_admission_v1_AdmitResponse>;
  
  Record: grpc.handleUnaryCall<_ctg_admission_v1_RecordRequest__Output, _ctg_admission_v1_RecordResponse>;
  
  Refund: grpc.handleUnaryCall<_ctg_admission_v1_RefundRequest__Output, _ctg_admission_v1_RefundResponse>;
  
}

export interface AdmissionDefinition extends grpc.ServiceDefinition {
  Admit: MethodDefinition<_ctg_admission_v1_AdmitRequest, _ctg_admission_v1_AdmitResponse, _ctg_admission_v1_AdmitRequest__Output, _ctg_admission_v1_AdmitResponse__Output>
  Record: MethodDefinition<_ctg_admission_v1_RecordRequest, _ctg_admission_v1_RecordResponse, _ctg_admission_v1_RecordRequest__Output, _ctg_admission_v1_RecordResponse__Output>
  Refund: MethodDefinition<_ctg_admission_v1_RefundRequest, _ctg_admission_v1_RefundResponse, _ctg_admission_v1_RefundRequest__Output, _ctg_admission_v1_RefundResponse__Output>
}
