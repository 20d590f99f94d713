/**
 * Starts the embedder alone (as `npm run embedder` does) on a free port with a given model,
 * and builds its request bodies.
 */
import { clinicalTexts, type TextKind } from './corpus.ts';
import { freePort, startService, waitUntil, type Service } from './processes.ts';

/** A running embedder and its base URL. */
export interface Embedder {
  service: Service;
  baseUrl: string;
}

/** Request body with `count` texts of one kind; notes ask for truncation, since models differ in maxTokens. */
export function embeddingBody(model: string, kind: TextKind, count: number, extra: Record<string, unknown> = {}): string {
  const input = clinicalTexts(kind, count, 3);
  return JSON.stringify({ model, input: count === 1 ? input[0] : input, ...(kind === 'note' ? { truncate_prompt_tokens: -1 } : {}), ...extra });
}

/** Which embedder to run: the repository's, or a patched copy (bench/tuning/*.patch, see bench/variant.sh). */
let embedderEntry = 'embedder/src/main.ts';

/** Points every later startEmbedder at another entry file. */
export function useEmbedderEntry(entry: string): void {
  embedderEntry = entry;
}

/** Starts the embedder with MODEL_DIR and extra variables (and node flags, e.g. --cpu-prof); resolves once it embeds. */
export async function startEmbedder(modelDir: string, modelId: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Embedder> {
  const port = await freePort();
  const service = startService('embedder', process.execPath, [...nodeArgs, '--import', 'tsx', embedderEntry], {
    MODEL_DIR: modelDir, EMBEDDER_HOST: '127.0.0.1', EMBEDDER_PORT: String(port), LOG_LEVEL: 'warn', ...env,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const body = embeddingBody(modelId, 'short', 1);
  await waitUntil(service, 120_000, async () => {
    const res = await fetch(`${baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-model': modelId }, body });
    await res.arrayBuffer();
    return res.status === 200;
  });
  return { service, baseUrl };
}
