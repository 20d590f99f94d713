/**
 * The model's fingerprint: one hash over the files that decide its vectors (weights, tokenizer,
 * manifest), computed once at start-up and sent on every 200 as `x-model-fingerprint`, so an
 * index can tell when the model behind the same model id changed and its vectors must be
 * re-embedded. Streamed, so a 1.3 GB export is hashed in constant memory.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

/** What is hashed, in this order; each file is framed by its name and size, so no two sets collide. */
const FINGERPRINTED_FILES = ['manifest.json', 'tokenizer.json', 'model.onnx'] as const;

async function addFile(hash: Hash, path: string, name: string): Promise<void> {
  const { size } = await stat(path);
  hash.update(`${name}\0${size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

/** `sha256:<64 hex>` over the model directory's manifest, tokenizer and weights. */
export async function modelFingerprint(modelDir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const name of FINGERPRINTED_FILES) await addFile(hash, join(modelDir, name), name);
  return `sha256:${hash.digest('hex')}`;
}

/** Unix seconds of the weights' modification time: when the served model was installed (`created` in GET /v1/models). */
export async function modelInstalledAt(modelDir: string): Promise<number> {
  const { mtimeMs } = await stat(join(modelDir, 'model.onnx'));
  return Math.floor(mtimeMs / 1000);
}
