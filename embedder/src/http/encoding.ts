/**
 * The two wire forms of a vector: JSON numbers, or base64 of its little-endian float32 bytes
 * taken straight from the Float32Array's memory (no per-number work on little-endian hosts).
 */
import { endianness } from 'node:os';

export type EncodingFormat = 'float' | 'base64';

const LITTLE_ENDIAN_HOST = endianness() === 'LE';

/** Encodes one vector as the request's `encoding_format` asks. */
export function encodeVector(vector: Float32Array, format: EncodingFormat): number[] | string {
  return format === 'base64' ? toBase64(vector) : Array.from(vector);
}

/** Base64 of the vector as little-endian float32 (4 bytes a value). */
export function toBase64(vector: Float32Array): string {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
  // Big-endian hosts must reorder each value's bytes; the wire format is little-endian.
  const view = new DataView(new ArrayBuffer(vector.byteLength));
  for (const [i, value] of vector.entries()) view.setFloat32(i * 4, value, true);
  return Buffer.from(view.buffer).toString('base64');
}

/** Decodes the base64 form back into floats (the clients' side; used by tests and tools). */
export function fromBase64(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
