/**
 * The settings authz and admin must read alike, or keys made by one would not work in the
 * other: the API key prefix, the secret key hashes are keyed with, the served model and the
 * default per-minute limits an organization without overrides gets. Read through the shared
 * EnvReader, so a bad value is reported with every other one.
 */
import { isAbsolute, resolve } from 'node:path';
import type { EnvReader } from './env.js';
import { readManifestId } from './model-manifest.js';
import { readSecret } from './secrets.js';

export interface AccessSettings {
  /** KEY_PREFIX: the first segment of every API key. */
  readonly keyPrefix: string;
  /** KEY_HASH_SECRET[_FILE]: keys the HMAC of every key's secret (contract/api-key.ts). */
  readonly keyHashSecret: string;
  /** MODEL_ID (else MODEL_DIR's manifest): the served model. */
  readonly modelId: string;
  /** DEFAULT_RPM / DEFAULT_TPM: the limits of an organization without overrides. */
  readonly defaultRpm: number;
  readonly defaultTpm: number;
}

/** Reads the shared access settings; relative file paths start at `root` (the repository or the image's app folder). */
export function readAccessSettings(read: EnvReader, root: string): AccessSettings {
  return {
    keyPrefix: read.matching('KEY_PREFIX', /^[A-Z][A-Z0-9]{0,15}$/, 'an upper-case letter then up to 15 of A-Z 0-9'),
    // authz and admin must hash keys with the same secret; by default both read the file
    // `make up` creates, so nobody has to export anything for local use.
    keyHashSecret: readSecret(read, 'KEY_HASH_SECRET', root),
    modelId: readModelId(read, root),
    defaultRpm: read.integer('DEFAULT_RPM', 0, 100_000_000),
    defaultTpm: read.integer('DEFAULT_TPM', 0, 1_000_000_000),
  };
}

// The stack passes the same MODEL_ID to the embedder and authz; without it, the id in the
// installed model's manifest is served, as the embedder does.
function readModelId(read: EnvReader, root: string): string {
  const modelId = read.optional('MODEL_ID');
  if (modelId !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/.test(modelId)) read.problem('MODEL_ID', 'be 1-128 of A-Z a-z 0-9 . _ / -', modelId);
    return modelId;
  }
  const path = read.string('MODEL_DIR');
  try {
    return readManifestId(isAbsolute(path) ? path : resolve(root, path));
  } catch (error) {
    read.problem('MODEL_ID', `be set, or MODEL_DIR hold a readable manifest: ${(error as Error).message}`);
  }
  return '';
}
