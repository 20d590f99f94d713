/**
 * The model directory's manifest.json: what the embedder needs to know about a model that the
 * ONNX graph and tokenizer do not say (id, pooling, instructions, widths).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The API's fixed vector width; narrower models are zero-padded up to it. */
export const API_DIMENSIONS = 1024;

export type Pooling = 'cls' | 'mean';

export interface ModelManifest {
  readonly id: string;
  readonly nativeDimensions: number;
  readonly dimensions: number;
  readonly maxTokens: number;
  readonly pooling: Pooling;
  readonly normalize: boolean;
  readonly outputName: string;
  readonly queryInstruction: string;
  readonly documentInstruction: string;
  readonly license?: string;
  readonly source?: string;
  readonly notes?: string;
}

/** Checks a parsed manifest; throws one error naming every bad field. */
function parseManifest(raw: unknown, where = 'manifest.json'): ModelManifest {
  const m = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const bad: string[] = [];
  const str = (key: string, allowEmpty = false): string => {
    const v = m[key];
    if (typeof v !== 'string' || (!allowEmpty && v === '')) bad.push(`${key} must be a ${allowEmpty ? '' : 'non-empty '}string`);
    return typeof v === 'string' ? v : '';
  };
  const int = (key: string, min: number, max: number): number => {
    const v = m[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) bad.push(`${key} must be an integer from ${min} to ${max}`);
    return typeof v === 'number' ? v : 0;
  };
  // Notes a bad field and stands in a value, so every field is still checked and reported at once.
  const flag = <T>(message: string, standIn: T): T => {
    bad.push(message);
    return standIn;
  };
  const manifest: ModelManifest = {
    id: str('id'),
    nativeDimensions: int('nativeDimensions', 1, API_DIMENSIONS),
    dimensions: int('dimensions', API_DIMENSIONS, API_DIMENSIONS),
    maxTokens: int('maxTokens', 2, 8192),
    pooling: m.pooling === 'cls' || m.pooling === 'mean' ? m.pooling : flag('pooling must be "cls" or "mean"', 'cls'),
    normalize: m.normalize === true ? true : flag('normalize must be true (the API promises unit vectors)', true),
    outputName: m.outputName === undefined ? 'last_hidden_state' : str('outputName'),
    queryInstruction: str('queryInstruction', true),
    documentInstruction: m.documentInstruction === undefined ? '' : str('documentInstruction', true),
    ...optional(m, 'license'),
    ...optional(m, 'source'),
    ...optional(m, 'notes'),
  };
  if (bad.length > 0) throw new Error(`invalid ${where}: ${bad.join('; ')}`);
  return Object.freeze(manifest);
}

function optional(m: Record<string, unknown>, key: 'license' | 'source' | 'notes'): Partial<ModelManifest> {
  return typeof m[key] === 'string' ? { [key]: m[key] } : {};
}

/** Reads and checks `<dir>/manifest.json`. */
export function readManifest(dir: string): ModelManifest {
  const path = join(dir, 'manifest.json');
  return parseManifest(readJson(path), path);
}

/** Only the served model id of `<dir>/manifest.json` (what authz and the stack scripts need). */
export function readManifestId(dir: string): string {
  const path = join(dir, 'manifest.json');
  const id = (readJson(path) as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '') throw new Error(`invalid ${path}: id must be a non-empty string`);
  return id;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read model manifest ${path}: ${(err as Error).message}`);
  }
}
