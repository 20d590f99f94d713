"""Schemathesis hooks for test/e2e/schemathesis.test.ts (loaded through SCHEMATHESIS_HOOKS).

Two facts the schema cannot state, applied to schema-valid (positive) cases only, so that
those cases reach the model instead of stopping at a refusal the specification mandates:
- `model` (in the body, or the path of GET /v1/models/{model}) must be the served model's id,
  which differs per deployment (env MODEL); any other string is the specification's 403
  model_not_enabled.
- `dimensions` is always refused (the specification's 400 invalid_request), so no value of
  it is positive; negative cases still send it.
- a batch upload's `file` must hold batch request lines (JSONL); any other bytes are a
  malformed file (400), so a positive upload is given one valid line.
And one fact of HTTP: RFC 10008 (section 2) makes a QUERY request without Content-Type
malformed, and Envoy refuses it with 400 (response detail query_missing_content_type) before
any route is chosen. Schemathesis's probe for undeclared methods sends a bare QUERY and wants
405; it is given a Content-Type so it tests what it means to test, the method.
"""
import json
import os

import schemathesis

MODEL = os.environ["MODEL"]


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.method.upper() == "QUERY":
        headers = case.headers if case.headers is not None else {}
        if not any(name.lower() == "content-type" for name in headers):
            case.headers = {**headers, "Content-Type": "application/json"}
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    if case.path_parameters and "model" in case.path_parameters:
        case.path_parameters["model"] = MODEL
    if not isinstance(case.body, dict):
        return
    # A batch file's lines must be batch requests (JSONL): bytes of any other kind are a
    # malformed file, the specification's 400, so a positive upload carries one valid line.
    # Only when every part of the case is meant to be valid: a case whose headers are the invalid
    # part must stay refused for that reason, not pass because its file became valid.
    components = getattr(meta, "components", None) or {}
    all_positive = all(info.mode.is_positive for info in components.values())
    if case.method.upper() == "POST" and case.path == "/v1/files" and "file" in case.body and all_positive:
        line = {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": MODEL, "input": "text"}}
        # A string, as the schema's `type: string, format: binary` reads (bytes fail its revalidation).
        case.body["file"] = json.dumps(line) + "\n"
        return
    if "model" in case.body:
        case.body["model"] = MODEL
    case.body.pop("dimensions", None)
