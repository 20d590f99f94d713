// Original file: authz/proto/ctg/admission/v1/admission.proto


export interface RecordResponse {
  'recorded'?: (boolean);
}

export interface RecordResponse__Output {
  'recorded': (boolean);
}
