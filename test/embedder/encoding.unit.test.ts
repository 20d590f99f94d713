import { describe, expect, it } from 'vitest';
import { encodeVector, fromBase64, toBase64 } from '../../embedder/src/http/encoding.js';
import { renderEmbeddingResponse } from '../../embedder/src/http/response-body.js';

describe('vector encoding', () => {
  it('base64 is little-endian float32, 4096 bytes for 1024 values', () => {
    const v = new Float32Array(1024);
    v[0] = 1;
    v[1023] = -2;
    const text = toBase64(v);
    const bytes = Buffer.from(text, 'base64');
    expect(bytes).toHaveLength(4096);
    expect([...bytes.subarray(0, 4)]).toEqual([0x00, 0x00, 0x80, 0x3f]); // 1.0f, little-endian
    expect(bytes.readFloatLE(4092)).toBe(-2);
  });

  it('base64 decodes to exactly the float form', () => {
    const v = Float32Array.from({ length: 1024 }, (_, i) => Math.sin(i) / 32);
    expect(Array.from(fromBase64(encodeVector(v, 'base64') as string))).toEqual(encodeVector(v, 'float'));
  });

  it('encodes a view into a larger buffer (the batch buffer) without its neighbours', () => {
    const batch = Float32Array.from({ length: 3 * 4 }, (_, i) => i);
    const middle = batch.subarray(4, 8);
    expect(Array.from(fromBase64(toBase64(middle)))).toEqual([4, 5, 6, 7]);
    expect(encodeVector(middle, 'float')).toEqual([4, 5, 6, 7]);
  });

  it('renders the response byte-for-byte as JSON.stringify would', async () => {
    const vectors = [Float32Array.from([0.5, -0.25]), Float32Array.from([1, 0])];
    const head = { id: 'embd-0', object: 'list' as const, created: 1, model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } };
    for (const format of ['float', 'base64'] as const) {
      const text = await renderEmbeddingResponse(head, vectors, format);
      const expected = {
        id: 'embd-0',
        object: 'list',
        created: 1,
        model: 'm',
        data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encodeVector(v, format) })),
        usage: head.usage,
      };
      expect(text).toBe(JSON.stringify(expected));
    }
  });
});
