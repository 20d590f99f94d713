/**
 * Calls the gateway with the official OpenAI Node SDK, as a user would: `baseURL` set to
 * `{base_url}/v1`, a gateway key as the API key, and the local CA trusted through
 * NODE_EXTRA_CA_CERTS (set by the test that runs this script). Prints one JSON report.
 * Env: GATEWAY_BASE_URL, MODEL, KEY, KEY_WITHOUT_MODEL, KEY_LIMITED (an org with rpm 1);
 * MODE=unavailable reports only the 503 a call gets while the embedder is down.
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

// The SDK's classes by status; the report names the most specific one the error is.
const CLASSES = [
  OpenAI.BadRequestError,
  OpenAI.AuthenticationError,
  OpenAI.PermissionDeniedError,
  OpenAI.NotFoundError,
  OpenAI.RateLimitError,
  OpenAI.InternalServerError,
];

interface ErrorReport {
  class: string;
  status?: number | undefined;
  code?: unknown;
  type?: unknown;
  param?: unknown;
  message?: string;
  requestId?: unknown;
}

/** The SDK error `call` throws (on one of `tries` attempts), described. */
async function errorOf(call: () => Promise<unknown>, tries = 1): Promise<ErrorReport> {
  for (let i = 0; i < tries; i += 1) {
    try {
      await call();
    } catch (err) {
      const e = err as InstanceType<typeof OpenAI.APIError>;
      const known = CLASSES.find((c) => err instanceof c);
      return {
        class: known?.name ?? (err as Error).constructor.name,
        status: e.status,
        code: e.code,
        type: e.type,
        param: e.param,
        message: e.message,
        requestId: e.requestID,
      };
    }
  }
  return { class: 'none' };
}

const embedWith =
  (apiKey: string, fields: { input?: string | string[] } = {}) =>
  () =>
    client(apiKey).embeddings.create({ model, input: 'x', ...fields });

const main = async () => {
  if (process.env.MODE === 'unavailable') {
    process.stdout.write(`${JSON.stringify({ errors: { 503: await errorOf(embedWith(env('KEY'))) } })}\n`);
    return;
  }
  const ok = client(env('KEY'));
  // The SDK's default request asks for base64 and decodes it into numbers.
  const byDefault = await ok.embeddings.create({ model, input });
  const asFloat = await ok.embeddings.create({ model, input, encoding_format: 'float' });
  const report = {
    model: byDefault.model,
    defaultLengths: byDefault.data.map((d) => d.embedding.length),
    floatLengths: asFloat.data.map((d) => d.embedding.length),
    maxAbsDifference: Math.max(
      ...byDefault.data.flatMap((d, i) => d.embedding.map((x, j) => Math.abs(x - asFloat.data[i]!.embedding[j]!))),
    ),
    defaultIsNumbers: byDefault.data.every((d) => d.embedding.every((x) => typeof x === 'number')),
    usage: asFloat.usage,
    errors: {
      400: await errorOf(embedWith(env('KEY'), { input: ['ok', ''] })),
      401: await errorOf(embedWith(`CTG_NOTAREALKEYX_${'Q'.repeat(38)}`)),
      403: await errorOf(embedWith(env('KEY_WITHOUT_MODEL'))),
      // The gateway serves no /v1/completions: Envoy's 404.
      404: await errorOf(() => ok.completions.create({ model, prompt: 'x' })),
      // rpm 1: the first call is allowed, the second refused.
      429: await errorOf(embedWith(env('KEY_LIMITED')), 3),
    },
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
};

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
