import { describe, expect, it } from 'vitest';
import { encodeVector, fromBase64, toBase64, vectorJson } from '../../embedder/src/http/encoding.js';
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

  it('renders the response as JSON.stringify would, but for the float values (read back exactly)', async () => {
    const vectors = [Float32Array.from([0.5, -0.25]), Float32Array.from([0.1, 0])];
    const head = { id: 'embd-0', object: 'list' as const, created: 1, model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } };
    for (const format of ['float', 'base64'] as const) {
      const text = (await renderEmbeddingResponse(head, vectors, format)).toString('utf8');
      const expected = {
        id: 'embd-0',
        object: 'list',
        created: 1,
        model: 'm',
        data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encodeVector(v, format) })),
        usage: head.usage,
      };
      // 0.1 as a float32 is 0.100000001490116…: JSON.stringify writes it widened to a double's
      // 17 digits, the renderer the nine that read back as the same float32.
      if (format === 'base64') expect(text).toBe(JSON.stringify(expected));
      else expect(text).toBe(JSON.stringify(expected).replace('0.10000000149011612', '0.100000001'));
    }
  });

  it('renders past its first estimate, and UTF-8 in the head, byte for byte as JSON.stringify', async () => {
    // Values of 1 or more go to JSON.stringify (17 digits each), beyond the writer's first
    // estimate of 13 bytes a value: the buffer must grow and keep what was written before.
    const wide = Float32Array.from({ length: 1024 }, (_, i) => 1 + i / 3);
    const small = Float32Array.from({ length: 1024 }, (_, i) => Math.cos(i) / 32);
    const vectors = [small, wide, wide, small];
    const head = { id: 'embd-1', object: 'list' as const, created: 2, model: 'modèle-é', usage: { prompt_tokens: 9, total_tokens: 9 } };
    const bytes = await renderEmbeddingResponse(head, vectors, 'float');
    const back = JSON.parse(bytes.toString('utf8')) as { model: string; data: Array<{ index: number; embedding: number[] }> };
    expect(back.model).toBe('modèle-é');
    expect(back.data.map((d) => d.index)).toEqual([0, 1, 2, 3]);
    for (const [i, d] of back.data.entries()) expect(Float32Array.from(d.embedding)).toEqual(vectors[i]);
    expect(bytes.subarray(bytes.indexOf('"data"')).toString('utf8')).toContain(`"embedding":${JSON.stringify(Array.from(wide))}}`);
  });

  it('writes every float32 below 1 in magnitude so that it reads back exactly, in nine digits at most', () => {
    // Random bit patterns cover every exponent, subnormals included; and the edges by name.
    const bits = new Uint32Array(200_000);
    for (let i = 0; i < bits.length; i++) bits[i] = (Math.sin(i + 1) * 4_294_967_296) >>> 0;
    const all = new Float32Array(bits.buffer).filter((x) => Number.isFinite(x) && Math.abs(x) < 1);
    const edges = Float32Array.from([0, -0, 0.99999994, -0.99999994, 1e-6, 9.9999e-7, 1.4e-45, 1.17549435e-38, 0.1, 0.5, 1e-7, 0.000123]);
    for (const v of [all, edges]) {
      const text = vectorJson(v, 'float');
      const back = JSON.parse(text) as number[];
      expect(back).toHaveLength(v.length);
      // JSON has no -0 (JSON.stringify writes 0 too).
      expect(Float32Array.from(back)).toEqual(Float32Array.from(v, (x) => x + 0));
      for (const n of text.slice(1, -1).split(','))
        expect(n.replace(/^-|e-\d+$/g, '').replace(/^0\.0*|\./g, '').length).toBeLessThanOrEqual(9);
    }
    // The unit vectors the model writes: most values near 0.03, some tiny.
    expect(vectorJson(Float32Array.from([0.0214269999, -3.5e-8, 0]), 'float')).toBe('[0.0214269999,-3.49999993e-8,0]');
  });

  it('leaves a vector with a value of 1 or more, or not finite, to JSON.stringify whole', () => {
    for (const v of [Float32Array.from([1, 0.5]), Float32Array.from([0.5, -2]), Float32Array.from([0.5, Number.NaN])])
      expect(vectorJson(v, 'float')).toBe(JSON.stringify(Array.from(v)));
    expect(vectorJson(Float32Array.from([0.5, Number.POSITIVE_INFINITY]), 'float')).toBe('[0.5,null]');
  });

  it('base64 is written as JSON.stringify would', () => {
    const v = Float32Array.from({ length: 1024 }, (_, i) => Math.sin(i) / 32);
    expect(vectorJson(v, 'base64')).toBe(JSON.stringify(encodeVector(v, 'base64')));
  });
});
