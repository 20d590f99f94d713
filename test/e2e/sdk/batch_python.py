"""The OpenAI Python SDK's Batch API calls against the gateway: upload, create, poll, download,
cancel, delete. Prints one JSON report (counts and ids, never vectors).
Env: GATEWAY_BASE_URL, GATEWAY_CA, KEY, MODEL, LINES."""
import io, json, os, ssl, time
import openai

ca = ssl.create_default_context(cafile=os.environ["GATEWAY_CA"])
client = openai.OpenAI(base_url=os.environ["GATEWAY_BASE_URL"] + "/v1", api_key=os.environ["KEY"],
                       http_client=openai.DefaultHttpxClient(verify=ca))
model, lines = os.environ["MODEL"], int(os.environ.get("LINES", "50"))


def request(i):
    return json.dumps({"custom_id": f"note-{i}", "method": "POST", "url": "/v1/embeddings",
                       "body": {"model": model, "input": f"Patient {i} denies chest pain."}})


def poll(batch_id, until):
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in until:
            return batch
        time.sleep(0.2)


content = "\n".join(request(i) for i in range(lines)).encode()
upload = client.files.create(file=("notes.jsonl", io.BytesIO(content)), purpose="batch")
created = client.batches.create(input_file_id=upload.id, endpoint="/v1/embeddings", completion_window="24h")
done = poll(created.id, ["completed", "failed", "expired", "cancelled"])
rows = [json.loads(l) for l in client.files.content(done.output_file_id).text.strip().split("\n")]
more = "\n".join(request(i) for i in range(40 * lines)).encode()
big = client.files.create(file=("more.jsonl", io.BytesIO(more)), purpose="batch")
second = client.batches.create(input_file_id=big.id, endpoint="/v1/embeddings", completion_window="24h")
cancelling = client.batches.cancel(second.id)
cancelled = poll(second.id, ["cancelled"])
deleted = client.files.delete(upload.id)
try:
    client.files.retrieve(upload.id)
    after_delete = 200
except openai.NotFoundError:
    after_delete = 404
print(json.dumps({
    "uploaded": {"id": upload.id, "purpose": upload.purpose, "filename": upload.filename, "bytes": upload.bytes},
    "created": created.status,
    "done": {"status": done.status, "counts": done.request_counts.model_dump()},
    "customIds": [r["custom_id"] for r in rows],
    "dims": [len(r["response"]["body"]["data"][0]["embedding"]) for r in rows],
    "cancelling": cancelling.status,
    "cancelled": {"status": cancelled.status, "counts": cancelled.request_counts.model_dump()},
    "deleted": deleted.deleted,
    "afterDelete": after_delete,
    "batchId": created.id,
    "secondId": second.id,
}))
