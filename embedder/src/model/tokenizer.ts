/**
 * The model's own tokenizer (tokenizer.json): the only importer of @huggingface/tokenizers.
 * Counts include the special tokens the model's post-processor adds ([CLS] … [SEP] for BERT).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

export interface ModelTokenizer {
  /** Token ids of `text`, special tokens included, never truncated. */
  encode(text: string): number[];
  /** How many special tokens the post-processor puts after the text (kept by truncation). */
  readonly closingSpecialTokens: number;
  /** How many special tokens it puts before the text. */
  readonly openingSpecialTokens: number;
}

/** Loads `<dir>/tokenizer.json`. */
export function loadTokenizer(dir: string): ModelTokenizer {
  const path = join(dir, 'tokenizer.json');
  let json: object;
  try {
    json = JSON.parse(readFileSync(path, 'utf8')) as object;
  } catch (err) {
    throw new Error(`cannot read tokenizer ${path}: ${(err as Error).message}`);
  }
  const tokenizer = new Tokenizer(json, {});
  const encode = (text: string): number[] => tokenizer.encode(text).ids;
  const { opening, closing } = specialTokenLayout(encode, (text) => tokenizer.encode(text, { add_special_tokens: false }).ids);
  return Object.freeze({ encode, openingSpecialTokens: opening, closingSpecialTokens: closing });
}

/**
 * Finds how many special tokens surround a text by encoding a probe with and without them;
 * truncation needs it so that the closing token ([SEP], </s>) survives the cut.
 */
export function specialTokenLayout(
  withSpecials: (text: string) => number[],
  withoutSpecials: (text: string) => number[],
): { opening: number; closing: number } {
  const probe = 'probe';
  const full = withSpecials(probe);
  const bare = withoutSpecials(probe);
  for (let start = 0; start + bare.length <= full.length; start++) {
    if (bare.every((id, i) => full[start + i] === id)) {
      return { opening: start, closing: full.length - start - bare.length };
    }
  }
  throw new Error('tokenizer post-processor does not keep the text tokens contiguous');
}
