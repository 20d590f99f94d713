import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, specialTokenLayout, type ModelTokenizer } from '../../embedder/src/model/tokenizer.js';
import { admitInput, contextLengthMessage, instructed, truncateIds, truncationPolicy } from '../../embedder/src/core/tokens.js';
import { ensureTestModel } from '../support/embedder-app.js';

const CLS = 101;
const SEP = 102;

describe('truncation policy (truncate_prompt_tokens)', () => {
  it('maps each documented value', () => {
    expect(truncationPolicy(undefined, 512)).toEqual({ ok: true, policy: { kind: 'reject' } });
    expect(truncationPolicy(-1, 512)).toEqual({ ok: true, policy: { kind: 'keep', tokens: 512 } });
    expect(truncationPolicy(2, 512)).toEqual({ ok: true, policy: { kind: 'keep', tokens: 2 } });
    expect(truncationPolicy(512, 512)).toEqual({ ok: true, policy: { kind: 'keep', tokens: 512 } });
    // The schema's rule (-1, or 2..512) and nothing else; a shorter model narrows the range.
    for (const bad of [0, 1, -2, -100, 513, 2.5]) {
      expect(truncationPolicy(bad, 512)).toEqual({
        ok: false,
        code: 'invalid_body',
        detail: 'truncate_prompt_tokens: must be -1 or from 2 to 512',
      });
    }
    expect(truncationPolicy(300, 256)).toMatchObject({ ok: false, code: 'invalid_body' });
  });
});

describe('token accounting', () => {
  it('cuts to the first k tokens and keeps the closing special token', () => {
    const ids = [CLS, 1, 2, 3, 4, 5, SEP];
    expect(truncateIds(ids, 4, 1)).toEqual([CLS, 1, 2, SEP]);
    expect(truncateIds(ids, 2, 1)).toEqual([CLS, SEP]);
    expect(truncateIds(ids, 7, 1)).toEqual(ids);
    expect(truncateIds(ids, 100, 1)).toEqual(ids);
    expect(truncateIds(ids, 3, 0)).toEqual([CLS, 1, 2]);
  });

  it('rejects an input over the limit unless truncation is asked for', () => {
    const long = Array.from({ length: 600 }, (_, i) => i);
    expect(admitInput(long, { kind: 'reject' }, 512, 1)).toEqual({ ok: false, requested: 600 });
    expect(admitInput(long.slice(0, 512), { kind: 'reject' }, 512, 1)).toMatchObject({ ok: true });
    const kept = admitInput(long, { kind: 'keep', tokens: 512 }, 512, 1);
    expect(kept.ok && kept.ids.length).toBe(512);
    expect(kept.ok && kept.ids.at(-1)).toBe(599);
  });

  it('words the limit like vLLM and carries only counts', () => {
    expect(contextLengthMessage(513, 512)).toBe(
      "This model's maximum context length is 512 tokens. However, you requested 513 tokens in the input for embedding generation. Please reduce the length of the input.",
    );
  });

  it('prefixes the query instruction; document and no input_type read the same', () => {
    const m = { queryInstruction: 'Q: ', documentInstruction: '' };
    expect(instructed('text', 'query', m)).toBe('Q: text');
    expect(instructed('text', 'document', m)).toBe('text');
    expect(instructed('text', undefined, m)).toBe('text');
  });
});

describe('the model tokenizer (bert-base-uncased WordPiece)', () => {
  let tokenizer: ModelTokenizer;
  beforeAll(() => {
    tokenizer = loadTokenizer(ensureTestModel());
  });

  it('counts special tokens: [CLS] text [SEP]', () => {
    const ids = tokenizer.encode('heart attack');
    expect(ids).toHaveLength(4);
    expect(ids[0]).toBe(CLS);
    expect(ids.at(-1)).toBe(SEP);
    expect(tokenizer.encode('Myocardial infarction').length).toBeGreaterThan(4); // WordPiece splits rare words
    expect(tokenizer.openingSpecialTokens).toBe(1);
    expect(tokenizer.closingSpecialTokens).toBe(1);
  });

  it('never truncates on its own', () => {
    expect(tokenizer.encode('word '.repeat(700))).toHaveLength(702);
  });

  it('finds the special-token layout of any post-processor', () => {
    const layout = specialTokenLayout(
      (t) => [0, 9, ...t.split('').map((c) => c.charCodeAt(0)), 2],
      (t) => t.split('').map((c) => c.charCodeAt(0)),
    );
    expect(layout).toEqual({ opening: 2, closing: 1 });
  });
});
