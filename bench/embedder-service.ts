/**
 * Starts the embedder alone (the stack module's embedder component) on a free port with a given
 * model, and builds its request bodies.
 */
import { resolve } from 'node:path';
import { embedderComponent } from '../scripts/stack/components.ts';
import { BODY_SEED, clinicalTexts, type TextKind } from './corpus.ts';
import { freePort, startService, type Service } from './processes.ts';

/** A running embedder and its base URL. */
export interface Embedder {
  service: Service;
  baseUrl: string;
}

/** Request body with `count` texts of one kind; notes ask for truncation, since models differ in maxTokens. */
export function embeddingBody(model: string, kind: TextKind, count: number, extra: Record<string, unknown> = {}): string {
  const input = clinicalTexts(kind, count, BODY_SEED);
  return JSON.stringify({
    model,
    input: count === 1 ? input[0] : input,
    ...(kind === 'note' ? { truncate_prompt_tokens: -1 } : {}),
    ...extra,
  });
}

/** Which embedder to run: the repository's, or a patched copy (bench/tuning/*.patch, see bench/variant.sh). */
let embedderEntry: string | undefined;

/** Points every later startEmbedder at another entry file. */
export function useEmbedderEntry(entry: string): void {
  embedderEntry = entry;
}

/** Starts the embedder with MODEL_DIR and extra variables (and node flags, e.g. --cpu-prof); resolves once ready. */
export async function startEmbedder(
  modelDir: string,
  modelId: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Embedder> {
  const port = await freePort();
  const spec = embedderComponent(
    { modelDir, modelId, keyHashSecretFile: '', grantSecretFile: '', redisUrl: '' },
    {
      host: '127.0.0.1',
      port,
      logFile: resolve('.local/bench/logs/embedder.log'),
      entry: embedderEntry,
      nodeArgs,
      // The bench's own settings (batching variants, LOG_LEVEL) win over the contract's MODEL_ID only where given.
      baseEnv: { ...inherited(), LOG_LEVEL: 'warn' },
      overrides: env,
    },
  );
  return { service: await startService(spec), baseUrl: `http://127.0.0.1:${port}` };
}

/** The bench's own environment (bench/run.sh's settings), as the services inherited it before. */
export function inherited(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
}
