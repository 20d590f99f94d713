// Original file: authz/proto/ctg/admission/v1/admission.proto


export interface RefundResponse {
}

export interface RefundResponse__Output {
}
