import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AdmissionClient as _ctg_admission_v1_AdmissionClient, AdmissionDefinition as _ctg_admission_v1_AdmissionDefinition } from './ctg/admission/v1/Admission.js';
import type { AdmitRequest as _ctg_admission_v1_AdmitRequest, AdmitRequest__Output as _ctg_admission_v1_AdmitRequest__Output } from './ctg/admission/v1/AdmitRequest.js';
import type { AdmitResponse as _ctg_admission_v1_AdmitResponse, AdmitResponse__Output as _ctg_admission_v1_AdmitResponse__Output } from './ctg/admission/v1/AdmitResponse.js';
import type { RecordRequest as _ctg_admission_v1_RecordRequest, RecordRequest__Output as _ctg_admission_v1_RecordRequest__Output } from './ctg/admission/v1/RecordRequest.js';
import type { RecordResponse as _ctg_admission_v1_RecordResponse, RecordResponse__Output as _ctg_admission_v1_RecordResponse__Output } from './ctg/admission/v1/RecordResponse.js';
import type { RefundRequest as _ctg_admission_v1_RefundRequest, RefundRequest__Output as _ctg_admission_v1_RefundRequest__Output } from './ctg/admission/v1/RefundRequest.js';
import type { RefundResponse as _ctg_admission_v1_RefundResponse, RefundResponse__Output as _ctg_admission_v1_RefundResponse__Output } from './ctg/admission/v1/RefundResponse.js';
import type { Ticket as _ctg_admission_v1_Ticket, Ticket__Output as _ctg_admission_v1_Ticket__Output } from './ctg/admission/v1/Ticket.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  ctg: {
    admission: {
      v1: {
        Admission: SubtypeConstructor<typeof grpc.Client, _ctg_admission_v1_AdmissionClient> & { service: _ctg_admission_v1_AdmissionDefinition }
        AdmitRequest: MessageTypeDefinition<_ctg_admission_v1_AdmitRequest, _ctg_admission_v1_AdmitRequest__Output>
        AdmitResponse: MessageTypeDefinition<_ctg_admission_v1_AdmitResponse, _ctg_admission_v1_AdmitResponse__Output>
        RecordRequest: MessageTypeDefinition<_ctg_admission_v1_RecordRequest, _ctg_admission_v1_RecordRequest__Output>
        RecordResponse: MessageTypeDefinition<_ctg_admission_v1_RecordResponse, _ctg_admission_v1_RecordResponse__Output>
        RefundRequest: MessageTypeDefinition<_ctg_admission_v1_RefundRequest, _ctg_admission_v1_RefundRequest__Output>
        RefundResponse: MessageTypeDefinition<_ctg_admission_v1_RefundResponse, _ctg_admission_v1_RefundResponse__Output>
        Ticket: MessageTypeDefinition<_ctg_admission_v1_Ticket, _ctg_admission_v1_Ticket__Output>
      }
    }
  }
}

