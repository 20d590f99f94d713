// Original file: authz/proto/ctg/admission/v1/admission.proto


// Original file: authz/proto/ctg/admission/v1/admission.proto

export const _ctg_admission_v1_AdmitResponse_Outcome = {
  ADMITTED: 'ADMITTED',
  OVER_LIMIT: 'OVER_LIMIT',
  TOO_LARGE: 'TOO_LARGE',
} as const;

export type _ctg_admission_v1_AdmitResponse_Outcome =
  | 'ADMITTED'
  | 0
  | 'OVER_LIMIT'
  | 1
  | 'TOO_LARGE'
  | 2

export type _ctg_admission_v1_AdmitResponse_Outcome__Output = typeof _ctg_admission_v1_AdmitResponse_Outcome[keyof typeof _ctg_admission_v1_AdmitResponse_Outcome]

export interface AdmitResponse {
  'outcome'?: (_ctg_admission_v1_AdmitResponse_Outcome);
  'tpm'?: (number);
  'tokens_remaining'?: (number);
  'retry_after_ms'?: (number);
}

export interface AdmitResponse__Output {
  'outcome': (_ctg_admission_v1_AdmitResponse_Outcome__Output);
  'tpm': (number);
  'tokens_remaining': (number);
  'retry_after_ms': (number);
}
