"""Calls the gateway with the official OpenAI Python SDK, as a user would.

`base_url` is `{base_url}/v1`, the API key is a gateway key, and the local CA is trusted via
an SSL context passed to the SDK's own httpx client. Prints one JSON report.
Env: GATEWAY_BASE_URL, GATEWAY_CA, MODEL, KEY, KEY_WITHOUT_MODEL, KEY_LIMITED (rpm 1);
MODE=unavailable reports only the 503 a call gets while the embedder is down.
"""
import json
import os
import ssl

import openai

BASE_URL = os.environ["GATEWAY_BASE_URL"] + "/v1"
CA = ssl.create_default_context(cafile=os.environ["GATEWAY_CA"])
MODEL = os.environ["MODEL"]
INPUT = ["The patient denies chest pain.", "Troponin within normal limits."]


def client(api_key):
    return openai.OpenAI(
        base_url=BASE_URL, api_key=api_key, max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=CA),
    )


def describe(err):
    return {
        "class": type(err).__name__, "status": err.status_code, "code": err.code,
        "type": err.type, "param": err.param,
    }


def error_of(call, tries=1):
    """The SDK error `call` raises (on one of `tries` attempts), described."""
    for _ in range(tries):
        try:
            call()
        except openai.APIStatusError as err:
            return describe(err)
    return {"class": "none"}


def embed_with(api_key, **fields):
    return lambda: client(api_key).embeddings.create(model=MODEL, **({"input": "x"} | fields))


def main():
    if os.environ.get("MODE") == "unavailable":
        print(json.dumps({"errors": {"503": error_of(embed_with(os.environ["KEY"]))}}))
        return
    ok = client(os.environ["KEY"])
    # The SDK's default request asks for base64 and decodes it into floats.
    by_default = ok.embeddings.create(model=MODEL, input=INPUT)
    as_float = ok.embeddings.create(model=MODEL, input=INPUT, encoding_format="float")
    report = {
        "model": by_default.model,
        "defaultLengths": [len(d.embedding) for d in by_default.data],
        "floatLengths": [len(d.embedding) for d in as_float.data],
        "maxAbsDifference": max(
            abs(x - y) for d, f in zip(by_default.data, as_float.data) for x, y in zip(d.embedding, f.embedding)
        ),
        "defaultIsNumbers": all(isinstance(x, float) for d in by_default.data for x in d.embedding),
        "usage": {"prompt_tokens": as_float.usage.prompt_tokens, "total_tokens": as_float.usage.total_tokens},
        "errors": {
            "400": error_of(embed_with(os.environ["KEY"], input=["ok", ""])),
            "401": error_of(embed_with("CTG_NOTAREALKEYX_" + "Q" * 38)),
            "403": error_of(embed_with(os.environ["KEY_WITHOUT_MODEL"])),
            # The gateway serves no /v1/completions: Envoy's 404.
            "404": error_of(lambda: ok.completions.create(model=MODEL, prompt="x")),
            # rpm 1: the first call is allowed, the second refused.
            "429": error_of(embed_with(os.environ["KEY_LIMITED"]), 3),
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
