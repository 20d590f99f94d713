"""Issue 25 as a user met it: four parallel 1,000-input requests from one organization with the
OpenAI Python SDK's default retries (two). Prints the outcome of each (ok or the error class).
Env: GATEWAY_BASE_URL, GATEWAY_CA, KEY, MODEL."""
import asyncio, json, os, ssl
import openai

ca = ssl.create_default_context(cafile=os.environ["GATEWAY_CA"])
client = openai.AsyncOpenAI(base_url=os.environ["GATEWAY_BASE_URL"] + "/v1", api_key=os.environ["KEY"],
                            http_client=openai.DefaultAsyncHttpxClient(verify=ca))


async def one(n):
    try:
        res = await client.embeddings.create(model=os.environ["MODEL"],
                                             input=[f"Sentence {n}.{i}: patient denies chest pain." for i in range(1000)])
        return f"ok:{len(res.data)}"
    except openai.APIStatusError as error:
        return f"{type(error).__name__}:{error.status_code}"


async def main():
    print(json.dumps(await asyncio.gather(*(one(n) for n in range(4)))))

asyncio.run(main())
