/**
 * Calls the gateway with the official OpenAI Node SDK, as a user would: `baseURL` set to
 * `{base_url}/v1`, a gateway key as the API key, and the local CA trusted through
 * NODE_EXTRA_CA_CERTS (set by the test that runs this script). Prints one JSON report.
 * Env: GATEWAY_BASE_URL, MODEL, KEY, KEY_WITHOUT_MODEL, KEY_LIMITED (an org with rpm 1).
 */
import OpenAI from 'openai';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const client = (apiKey: string) => new OpenAI({ baseURL: `${env('GATEWAY_BASE_URL')}/v1`, apiKey, maxRetries: 0 });
const model = env('MODEL');
const input = ['The patient denies chest pain.', 'Troponin within normal limits.'];

async function errorOf(apiKey: string, tries: number): Promise<{ class: string; status: number | undefined; code: unknown; message: string | undefined; requestId: unknown }> {
  for (let i = 0; i < tries; i += 1) {
    try {
      await client(apiKey).embeddings.create({ model, input: 'x' });
    } catch (err) {
      const e = err as InstanceType<typeof OpenAI.APIError>;
      const known = [OpenAI.AuthenticationError, OpenAI.PermissionDeniedError, OpenAI.RateLimitError].find((c) => err instanceof c);
      return { class: known?.name ?? (err as Error).constructor.name, status: e.status, code: e.code, message: e.message, requestId: e.requestID };
    }
  }
  return { class: 'none', status: undefined, code: undefined, message: undefined, requestId: undefined };
}

const main = async () => {
  const ok = client(env('KEY'));
  // The SDK's default request asks for base64 and decodes it into numbers.
  const byDefault = await ok.embeddings.create({ model, input });
  const asFloat = await ok.embeddings.create({ model, input, encoding_format: 'float' });
  const report = {
    model: byDefault.model,
    defaultLengths: byDefault.data.map((d) => d.embedding.length),
    floatLengths: asFloat.data.map((d) => d.embedding.length),
    maxAbsDifference: Math.max(...byDefault.data.flatMap((d, i) => d.embedding.map((x, j) => Math.abs(x - asFloat.data[i]!.embedding[j]!)))),
    defaultIsNumbers: byDefault.data.every((d) => d.embedding.every((x) => typeof x === 'number')),
    usage: asFloat.usage,
    errors: {
      401: await errorOf(`CTG_NOTAREALKEYX_${'Q'.repeat(38)}`, 1),
      403: await errorOf(env('KEY_WITHOUT_MODEL'), 1),
      // rpm 1: the first call is allowed, the second refused.
      429: await errorOf(env('KEY_LIMITED'), 3),
    },
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
};

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
