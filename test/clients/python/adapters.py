"""How the driver reads vectors out of each client's snippet, and calls it without retries.

Each adapter uses only the names the README snippet defines (a renamed variable fails the
run). `no_retries` returns a call whose errors surface at once: every client retries a 429
(the OpenAI SDK after its retry-after, up to a minute), which would hide the class for minutes.
"""
import asyncio
from types import SimpleNamespace

MODEL = "all-MiniLM-L6-v2-int8"


def as_list(vector):
    return [float(x) for x in vector]


def _in_one_loop(document, query, first=False):
    """Both async calls in one event loop: the snippet's two clients share one async HTTP client."""
    async def both():
        return await asyncio.gather(document, query)

    doc, q = asyncio.run(both())
    return {"async": doc[0] if first else doc, "asyncQuery": q}


def models_of(client):
    """What the OpenAI SDK's models.list() and models.retrieve() return to `client` (its class on an error)."""
    client = client.with_options(max_retries=0)

    def retrieve(model):
        try:
            return client.models.retrieve(model).to_dict()
        except Exception as err:  # noqa: BLE001 - the class is what is reported
            return {"class": type(err).__name__, "status": getattr(err, "status_code", None)}

    return {"list": [m.to_dict() for m in client.models.list()], "retrieve": retrieve(MODEL), "unknown": retrieve("no-such-model")}


def _openai_python():
    def no_retries(ns):
        client = ns["client"].with_options(max_retries=0)
        return lambda texts: client.embeddings.create(model=MODEL, input=texts)

    return SimpleNamespace(
        document=lambda ns, t: ns["client"].embeddings.create(model=MODEL, input=[t]).data[0].embedding,
        query=lambda ns, t: ns["client"].embeddings.create(
            model=MODEL, input=[t], extra_body={"input_type": "query"}).data[0].embedding,
        # The snippet's own asyncio.run is the async check (its printed length): a second run
        # would reuse connections of a closed event loop.
        extra=lambda ns, t: {},
        no_retries=no_retries,
        # The same client with another organization's key: its models, and the error of one it may not use.
        models=lambda ns, key: models_of(ns["client"].with_options(api_key=key)),
    )


def _langchain():
    def no_retries(ns):
        documents = ns["documents"]
        documents.client = documents.client._client.with_options(max_retries=0).embeddings
        return documents.embed_documents

    return SimpleNamespace(
        document=lambda ns, t: ns["documents"].embed_documents([t])[0],
        query=lambda ns, t: ns["queries"].embed_query(t),
        extra=lambda ns, t: _in_one_loop(ns["documents"].aembed_documents([t]), ns["queries"].aembed_query(t), first=True),
        no_retries=no_retries,
    )


def _llamaindex():
    def no_retries(ns):
        documents = ns["documents"]
        documents.max_retries = 0
        documents._client = None  # rebuilt with max_retries=0
        return documents.get_text_embedding_batch

    return SimpleNamespace(
        document=lambda ns, t: ns["documents"].get_text_embedding_batch([t])[0],
        query=lambda ns, t: ns["queries"].get_query_embedding(t),
        extra=lambda ns, t: _in_one_loop(ns["documents"].aget_text_embedding(t), ns["queries"].aget_query_embedding(t)),
        no_retries=no_retries,
    )


def _haystack():
    from haystack import Document

    def no_retries(ns):
        documents = ns["documents"]
        documents.client = documents.client.with_options(max_retries=0)
        return lambda texts: documents.run([Document(content=x) for x in texts])

    return SimpleNamespace(
        document=lambda ns, t: ns["documents"].run([Document(content=t)])["documents"][0].embedding,
        query=lambda ns, t: ns["queries"].run(t)["embedding"],
        extra=lambda ns, t: {},
        no_retries=no_retries,
    )


def _litellm_no_retries(ns):
    import litellm

    # litellm reads max_retries=0 as unset (`max_retries or DEFAULT_MAX_RETRIES`), so the
    # OpenAI client it builds would wait out two retry-afters; its default is what counts.
    litellm.DEFAULT_MAX_RETRIES = 0
    return lambda texts: litellm.embedding(**ns["gateway"], input=texts)


def _litellm():
    import litellm

    def embed(ns, texts, **extra):
        return litellm.embedding(**ns["gateway"], input=texts, **extra).data[0]["embedding"]

    return SimpleNamespace(
        document=lambda ns, t: embed(ns, [t]),
        query=lambda ns, t: embed(ns, [t], input_type="query"),
        extra=lambda ns, t: {},
        no_retries=_litellm_no_retries,
    )


def _chromadb():
    def no_retries(ns):
        documents = ns["documents"]
        documents.client = documents.client.with_options(max_retries=0)
        collection = ns["collection"]  # errors as a chromadb user meets them: through the collection
        return lambda texts: collection.add(ids=[f"probe-{i}" for i in range(len(texts))], documents=texts)

    return SimpleNamespace(
        document=lambda ns, t: ns["documents"]([t])[0],
        query=lambda ns, t: ns["queries"]([t])[0],
        extra=lambda ns, t: {"hits": ns["hits"]["ids"]},
        no_retries=no_retries,
    )


def _lancedb():
    def no_retries(ns):
        documents = ns["documents"]
        documents.__dict__["_openai_client"] = documents._openai_client.with_options(max_retries=0)
        # The embedding function itself, without LanceDB's retries: a table re-creates its
        # function from the registry, with 7 retries of its own (minutes for a 429).
        return documents.compute_source_embeddings

    return SimpleNamespace(
        document=lambda ns, t: ns["documents"].compute_source_embeddings([t])[0],
        query=lambda ns, t: ns["queries"].compute_query_embeddings(t)[0],
        extra=lambda ns, t: {"hit": ns["hits"][0]["text"]},
        no_retries=no_retries,
        # LanceDB's async runtime may deadlock in a child forked after it started.
        fork_after_imports=False,
    )


def _vectors(adapter):
    """Wraps an adapter so vectors come back as plain lists of floats."""
    return SimpleNamespace(
        document=lambda ns, t: as_list(adapter.document(ns, t)),
        query=lambda ns, t: as_list(adapter.query(ns, t)),
        extra=lambda ns, t: {k: (as_list(v) if k.startswith("async") else v) for k, v in adapter.extra(ns, t).items()},
        no_retries=adapter.no_retries,
        fork_after_imports=getattr(adapter, "fork_after_imports", True),
        models=getattr(adapter, "models", None),
    )


# Factories, so a venv holds only the libraries of the clients it runs (litellm has its own).
FACTORIES = {
    "openai-python": _openai_python,
    "langchain-python": _langchain,
    "llamaindex": _llamaindex,
    "llamaindex-openai-like": _llamaindex,
    "haystack": _haystack,
    "litellm": _litellm,
    "chromadb": _chromadb,
    "lancedb": _lancedb,
}


def adapter_for(name):
    """The adapter of client `name`."""
    return _vectors(FACTORIES[name]())
