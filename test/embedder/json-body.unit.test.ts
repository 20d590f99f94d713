/**
 * The gateway's one body parser: what it accepts is the definition of a valid body (Envoy no
 * longer parses bodies), so every way two JSON parsers commonly disagree is refused here.
 */
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../openapi/problems.js';
import { MAX_JSON_DEPTH, nestingDepth, parseJsonBody } from '../../embedder/src/http/json-body.js';

const parse = (text: string | Buffer) => parseJsonBody(typeof text === 'string' ? Buffer.from(text, 'utf8') : text);

function refusal(text: string | Buffer): ProblemError {
  try {
    parse(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemError);
    return error as ProblemError;
  }
  throw new Error('the body was accepted');
}

describe('parseJsonBody', () => {
  it('parses an ordinary request, surrogate pairs and non-ASCII text included', () => {
    expect(parse('{"model":"m","input":["naïve 💊", "\\ud83d\\udc8a"]}')).toEqual({ model: 'm', input: ['naïve 💊', '💊'] });
  });

  it.each([
    ['a lone high surrogate escape in a value', '{"model":"m","input":"x\\ud800y"}'],
    ['a lone low surrogate escape', '{"model":"m","input":"\\udc00"}'],
    ['a lone surrogate in an ignored field', '{"model":"m","input":"x","note":["\\ud800"]}'],
    ['a lone surrogate in a key', '{"model":"m","input":"x","\\ud800":1}'],
    ['reversed pair', '{"input":"\\udc00\\ud800"}'],
  ])('refuses %s, naming body', (_name, text) => {
    const error = refusal(text);
    expect(error.code).toBe('invalid_body');
    expect(error.detail).toMatch(/^body: .*surrogate/);
  });

  it('refuses bytes that are not UTF-8 instead of replacing them', () => {
    const bytes = Buffer.concat([Buffer.from('{"model":"m","input":"x'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    expect(refusal(bytes).detail).toBe('body: must be UTF-8 encoded');
    // An encoded surrogate (CESU-8 style) is not UTF-8 either.
    expect(refusal(Buffer.concat([Buffer.from('{"input":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])).detail).toBe(
      'body: must be UTF-8 encoded',
    );
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels anywhere, ignored fields included`, () => {
    const deep = (n: number) => `{"model":"m","input":"x","extra":${'['.repeat(n)}${']'.repeat(n)}}`;
    expect(parse(deep(MAX_JSON_DEPTH - 1))).toMatchObject({ model: 'm' });
    expect(refusal(deep(MAX_JSON_DEPTH)).detail).toMatch(/^body: must not nest deeper/);
    expect(refusal(deep(1000)).code).toBe('invalid_body');
  });

  it('refuses empty and malformed bodies with a detail that names body and echoes nothing', () => {
    expect(refusal('  ').detail).toBe('body: must not be empty');
    const error = refusal('{"input":"CANARY-TEXT"');
    expect(error.detail).toBe('body: must be valid JSON');
    expect(JSON.stringify(error)).not.toContain('CANARY');
  });

  it('drops prototype-poisoning keys', () => {
    const body = parse('{"model":"m","__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}') as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['model']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('nestingDepth', () => {
  it('counts objects and arrays, not brackets inside strings or after escapes', () => {
    expect(nestingDepth('{}')).toBe(1);
    expect(nestingDepth('{"a":[[1]]}')).toBe(3);
    expect(nestingDepth('{"a":"[[[[{{{{"}')).toBe(1);
    expect(nestingDepth('{"a":"\\"[[[["}')).toBe(1);
    expect(nestingDepth('"x"')).toBe(0);
  });
});
