"""Runs one README client snippet as written, then probes the objects it defined.

Usage: python driver.py CLIENT SNIPPET_FILE. Env: KEY (a working key), KEY_BAD (unknown key),
KEY_NOMODEL (its organization lacks the model), KEY_LIMITED (a low requests-per-minute limit).
The snippet reads os.environ["KEY"]; each error case runs it again with another key there, the
way a user with that key would, and records the exception class the client raised. Prints
one JSON report: the snippet's printed lines, a document and a query vector of TEXT, and the
class per status; for the OpenAI SDK also what models.list() and models.retrieve() return.
"""
import contextlib
import io
import json
import os
import sys
import time

import adapters

TEXT = "Patient denies chest pain."
TOO_LONG = "word " * 600  # over 512 tokens: 400 invalid_request


def run_snippet(code, key):
    """Executes the snippet with `key` as KEY; returns (namespace, printed text, exception)."""
    os.environ["KEY"] = key
    namespace = {"__name__": "__main__"}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "snippet.py", "exec"), namespace)  # noqa: S102 - the README's own code
    except Exception as err:  # noqa: BLE001 - the class is what is reported
        return namespace, out.getvalue(), err
    return namespace, out.getvalue(), None


def describe(err):
    if err is None:
        return {"class": "none"}
    # Some wrappers (LanceDB's retries) keep the client's error as an argument.
    inner = next((a for a in getattr(err, "args", ()) if isinstance(a, BaseException)), None)
    report = {"class": type(err).__name__, "status": getattr(err, "status_code", None)}
    inner = inner or err.__cause__ or err.__context__
    # A wrapper's class says little without what it wraps; the OpenAI SDK's own chain does not matter.
    if inner is not None and type(err).__module__.split(".")[0] != "openai":
        report["wraps"] = type(inner).__name__
    return report


def error_of(adapter, code, key, text=TEXT, tries=1):
    """What a user with `key` sees: the snippet's own exception, else the probe call's."""
    namespace, _, err = run_snippet(code, key)
    if err is not None:
        return describe(err)
    for _ in range(tries):
        try:
            adapter.no_retries(namespace)([text])
        except Exception as err:  # noqa: BLE001
            return describe(err)
    return {"class": "none"}


def in_child(case):
    """Runs `case` in a forked child and returns its JSON result: every case starts from the
    same state, as a fresh program would (chromadb keeps its collections in the process)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = case()
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            result = {"crash": f"{type(err).__name__}: {err}"}
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def ok_case(adapter, code, key):
    namespace, printed, err = run_snippet(code, key)
    if err is not None:
        raise err
    return {
        "printed": printed.strip().splitlines(),
        "document": adapter.document(namespace, TEXT),
        "query": adapter.query(namespace, TEXT),
        **adapter.extra(namespace, TEXT),
    }


def bad_request_case(adapter, code, key):
    namespace, _, err = run_snippet(code, key)
    if err is not None:
        raise err
    try:
        adapter.no_retries(namespace)([TOO_LONG])
    except Exception as err:  # noqa: BLE001
        return describe(err)
    return {"class": "none"}


def main():
    """Runs the snippet and the probes, each case in its own child; returns the report."""
    client, snippet_file = sys.argv[1], sys.argv[2]
    adapter = adapters.adapter_for(client)
    code = open(snippet_file, encoding="utf-8").read()
    key = os.environ["KEY"]
    started = time.monotonic()
    # The snippet's imports once, before the children fork: they are its slow part.
    if adapter.fork_after_imports:
        exec("\n".join(line for line in code.splitlines() if line.startswith(("import ", "from "))), {})  # noqa: S102
    report = in_child(lambda: ok_case(adapter, code, key))
    if adapter.models is not None:
        # models.list() / models.retrieve(): with the working key, and with one whose organization lacks the model.
        report["models"] = {
            name: in_child(lambda k=k: adapter.models(run_snippet(code, key)[0], k))
            for name, k in (("key", key), ("noModel", os.environ["KEY_NOMODEL"]))
        }
    report["errors"] = {
        "400": in_child(lambda: bad_request_case(adapter, code, key)),
        "401": in_child(lambda: error_of(adapter, code, os.environ["KEY_BAD"])),
        "403": in_child(lambda: error_of(adapter, code, os.environ["KEY_NOMODEL"])),
        "429": in_child(lambda: error_of(adapter, code, os.environ["KEY_LIMITED"], tries=8)),
    }
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


if __name__ == "__main__":
    # Clients print banners of their own (litellm's "Give Feedback"): stdout carries only the report.
    with contextlib.redirect_stdout(sys.stderr):
        result = main()
    print(json.dumps(result))
