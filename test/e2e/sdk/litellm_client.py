"""Calls the gateway through litellm's OpenAI-compatible path, as a litellm user would.

`model` is `openai/<MODEL_ID>`, `api_base` is `{base_url}/v1`, the API key is a gateway key,
and the local CA is trusted through `litellm.ssl_verify`. Prints one JSON report of the
exception class litellm raises for each error the gateway can give.
Env: GATEWAY_BASE_URL, GATEWAY_CA, MODEL, KEY, KEY_WITHOUT_MODEL, KEY_LIMITED (rpm 1);
MODE=unavailable reports only the 503 a call gets while the embedder is down.
"""
import json
import os
import time

import litellm
import openai
from litellm.litellm_core_utils.exception_mapping_utils import exception_type

litellm.ssl_verify = os.environ["GATEWAY_CA"]
litellm.suppress_debug_info = True
BASE_URL = os.environ["GATEWAY_BASE_URL"] + "/v1"
MODEL = os.environ["MODEL"]


def embed(api_key, api_base=BASE_URL, **fields):
    return litellm.embedding(
        model=f"openai/{MODEL}", api_base=api_base, api_key=api_key, max_retries=0,
        **({"input": ["x"]} | fields),
    )


def error_of(call, tries=1):
    """The litellm exception `call` raises (on one of `tries` attempts), described."""
    started = time.monotonic()
    for _ in range(tries):
        try:
            call()
        except Exception as err:  # noqa: BLE001 - the class is what is being reported
            return {"class": type(err).__name__, "status": getattr(err, "status_code", None)}
    return {"class": "none", "seconds": round(time.monotonic() - started, 1)}


def mapped_by_litellm(call, tries):
    """The class litellm's exception mapping gives the OpenAI SDK error `call` raises."""
    for _ in range(tries):
        try:
            call()
        except openai.APIStatusError as err:
            return error_of(lambda: exception_type(model=MODEL, original_exception=err, custom_llm_provider="openai"))
    return {"class": "none"}


def main():
    key = os.environ["KEY"]
    if os.environ.get("MODE") == "unavailable":
        print(json.dumps({"errors": {"503": error_of(lambda: embed(key))}}))
        return
    ok = embed(key, input=["The patient denies chest pain."])
    # litellm 1.106 retries a 429 itself after its retry-after (60 s here), max_retries=0 or not,
    # so the rpm-1 key's refusal is fetched with the OpenAI SDK (no retries) and handed to
    # litellm's own exception mapping, the step every litellm call's error goes through.
    no_retries = openai.OpenAI(
        base_url=BASE_URL, api_key=os.environ["KEY_LIMITED"], max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=os.environ["GATEWAY_CA"]),
    )
    too_many = mapped_by_litellm(lambda: no_retries.embeddings.create(model=MODEL, input=["x"]), 3)
    report = {
        "lengths": [len(d["embedding"]) for d in ok.data],
        "errors": {
            "400": error_of(lambda: embed(key, input=["ok", ""])),
            # An input over 512 tokens: the model's context-length message.
            "400_context": error_of(lambda: embed(key, input=["a " * 600])),
            "401": error_of(lambda: embed("CTG_NOTAREALKEYX_" + "Q" * 38)),
            "403": error_of(lambda: embed(os.environ["KEY_WITHOUT_MODEL"])),
            # POST /v2/embeddings: a path the gateway does not serve (Envoy's 404).
            "404": error_of(lambda: embed(key, api_base=os.environ["GATEWAY_BASE_URL"] + "/v2")),
            "429": too_many,
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
