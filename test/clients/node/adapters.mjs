/**
 * How driver.mjs reads vectors out of each Node client's snippet, and calls it without
 * retries (the twin of ../python/adapters.py). `exports` names what the snippet must define;
 * a renamed variable fails the run.
 */
const MODEL = 'all-MiniLM-L6-v2-int8';

/** What the OpenAI SDK's models.list() and models.retrieve() give `client` (its class on an error). */
async function modelsOf(client) {
  const retrieve = (model) =>
    client.models.retrieve(model).then(
      (m) => ({ ...m }),
      (err) => ({ class: err.constructor.name, status: err.status ?? null }),
    );
  const list = [];
  for await (const model of client.models.list()) list.push({ ...model });
  return { list, retrieve: await retrieve(MODEL), unknown: await retrieve('no-such-model') };
}

export const adapters = {
  'openai-node': {
    exports: ['client'],
    document: async ({ client }, t) => (await client.embeddings.create({ model: MODEL, input: [t] })).data[0].embedding,
    query: async ({ client }, t) => (await client.embeddings.create({ model: MODEL, input: [t], input_type: 'query' })).data[0].embedding,
    extra: async () => ({}),
    noRetries:
      ({ client }) =>
      (texts) =>
        client.withOptions({ maxRetries: 0 }).embeddings.create({ model: MODEL, input: texts }),
    // The same client with another organization's key: its models, and the error of one it may not use.
    models: ({ client }, key) => modelsOf(client.withOptions({ apiKey: key, maxRetries: 0 })),
  },
  'langchain-node': {
    exports: ['documents', 'queries'],
    document: async ({ documents }, t) => (await documents.embedDocuments([t]))[0],
    query: ({ queries }, t) => queries.embedQuery(t),
    extra: async () => ({}),
    // LangChain's caller retries a 429 six times with backoff (about a minute).
    noRetries: ({ documents }) => {
      documents.caller.maxRetries = 0;
      return (texts) => documents.embedDocuments(texts);
    },
  },
  'vercel-ai': {
    exports: ['documents', 'queries', 'embed', 'embedMany'],
    document: async ({ documents, embed }, t) => (await embed({ model: documents, value: t })).embedding,
    query: async ({ queries, embed }, t) => (await embed({ model: queries, value: t })).embedding,
    // 1,001 values: more than one request takes, fewer than the provider's own 2,048.
    extra: async ({ documents, embedMany }, t) => {
      const values = Array.from({ length: 1001 }, (_, i) => `${t} ${i % 7}`);
      const { embeddings } = await embedMany({ model: documents, values, maxRetries: 0 });
      return { embedMany1001: embeddings.length };
    },
    noRetries:
      ({ documents, embedMany }) =>
      (texts) =>
        embedMany({ model: documents, values: texts, maxRetries: 0 }),
  },
};
