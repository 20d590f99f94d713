// Original file: authz/proto/ctg/admission/v1/admission.proto

import type { Ticket as _ctg_admission_v1_Ticket, Ticket__Output as _ctg_admission_v1_Ticket__Output } from '../../../ctg/admission/v1/Ticket.js';

export interface RefundRequest {
  'ticket'?: (_ctg_admission_v1_Ticket | null);
}

export interface RefundRequest__Output {
  'ticket': (_ctg_admission_v1_Ticket__Output | null);
}
