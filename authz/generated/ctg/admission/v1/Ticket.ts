// Original file: authz/proto/ctg/admission/v1/admission.proto


export interface Ticket {
  'admission_id'?: (string);
  'org'?: (string);
  'key_id'?: (string);
  'model'?: (string);
  'tokens'?: (number);
  'request_id'?: (string);
}

export interface Ticket__Output {
  'admission_id': (string);
  'org': (string);
  'key_id': (string);
  'model': (string);
  'tokens': (number);
  'request_id': (string);
}
