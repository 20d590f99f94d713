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

// Powers of ten a float32 value is scaled by to bring out its nine significant digits: exact
// doubles up to 1e22, and close enough beyond (a scale off by an ulp moves the ninth digit of
// none of the float32 values that test/embedder/encoding.unit.test.ts reads back).
const POW10 = Array.from({ length: 54 }, (_, i) => 10 ** i);
// floor(log10(2^(b - 127))) for each biased float32 exponent b: log10 of a value with that
// exponent is this or one more.
const DECIMAL_EXPONENT = Int8Array.from({ length: 256 }, (_, b) => Math.floor((b - 127) * Math.log10(2)));
// Longest number written: "-0.00000" and nine digits, or "-d.dddddddde-45": 18 bytes, a comma.
const BYTES_PER_VALUE = 19;

/**
 * Writes `x`, a float32 value with 0 < |x| < 1, at `pos` with nine significant digits at most
 * (always enough for the float32 to read back exactly): decimal down to 1e-6, exponent form
 * below. Returns the position after it, or -1 for a value it does not write (|x| >= 1).
 */
function writeValue(x: number, binaryExponent: number, buf: Buffer, at: number): number {
  let pos = at;
  let a = x;
  if (a < 0) {
    buf[pos++] = 45; // -
    a = -a;
  }
  // The decimal exponent, from the float32's own exponent field (or the log, for subnormals):
  // at most one below the right one, which the scale's check below corrects.
  let e = binaryExponent > 0 ? DECIMAL_EXPONENT[binaryExponent]! : Math.floor(Math.log10(a));
  let m = Math.round(a * POW10[8 - e]!);
  if (m >= 1e9) m = Math.round(a * POW10[8 - ++e]!);
  else if (m < 1e8) m = Math.round(a * POW10[8 - --e]!);
  if (e >= 0) return -1;
  // m has nine digits (below 2^31): integer arithmetic from here on.
  m |= 0;
  let digits = 9;
  while (digits > 1) {
    const q = (m / 10) | 0;
    if (m !== q * 10) break;
    m = q;
    digits--;
  }
  if (e >= -6) {
    buf[pos++] = 48; // 0
    buf[pos++] = 46; // .
    for (let i = -1; i > e; i--) buf[pos++] = 48;
    writeDigits(m, digits, buf, pos + digits);
    return pos + digits;
  }
  // d.ddddddddde-N
  if (digits === 1) buf[pos++] = 48 + m;
  else {
    const rest = digits - 1;
    const p = POW10[rest]!;
    const lead = (m / p) | 0;
    buf[pos++] = 48 + lead;
    buf[pos++] = 46; // .
    writeDigits(m - lead * p, rest, buf, pos + rest);
    pos += rest;
  }
  buf[pos++] = 101; // e
  buf[pos++] = 45; // -
  const exponent = -e;
  if (exponent >= 10) buf[pos++] = 48 + ((exponent / 10) | 0);
  buf[pos++] = 48 + (exponent % 10);
  return pos;
}

// "00" to "99": two digits of a value written per division.
const DIGIT_PAIRS = Buffer.from(Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0')).join(''), 'latin1');

/** Writes the `digits` lowest decimal digits of the integer `m` (zero-padded) to end just before `end`. */
function writeDigits(m: number, digits: number, buf: Buffer, end: number): void {
  let i = end;
  let n = m;
  let left = digits;
  while (left >= 2) {
    const q = (n / 100) | 0;
    const pair = (n - q * 100) * 2;
    buf[--i] = DIGIT_PAIRS[pair + 1]!;
    buf[--i] = DIGIT_PAIRS[pair]!;
    n = q;
    left -= 2;
  }
  if (left === 1) buf[--i] = 48 + n;
}

/**
 * A growing byte buffer a response is written into: the bytes go to the socket as they are,
 * with no string in between (a 1,024-float vector is ~12 KB; as a string it was copied into the
 * V8 heap, joined, measured and encoded back to bytes on its way out).
 */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(64, capacity));
  }

  /** Room for `n` more bytes; the buffer doubles (at least) when it runs out. */
  reserve(n: number): Buffer {
    if (this.pos + n > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
    return this.buf;
  }

  /** Appends `text` as UTF-8. */
  text(text: string): void {
    this.reserve(Buffer.byteLength(text));
    this.pos += this.buf.write(text, this.pos, 'utf8');
  }

  byte(value: number): void {
    this.reserve(1)[this.pos++] = value;
  }

  get length(): number {
    return this.pos;
  }

  /** Moves the end to `pos` (at most the current end): what `reserve` handed out and was written. */
  set length(pos: number) {
    this.pos = pos;
  }

  /** The bytes written (a view: the writer is done with). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * Appends the vector's JSON text. Float vectors are written with at most nine significant digits
 * per value, each reading back as exactly the float32 the model produced (the same value base64
 * carries); about twice as fast as `JSON.stringify`, which writes each float32 widened to a
 * double (up to 17 digits, a third more bytes) and was the embedder's largest single cost at 32
 * sentences a request (docs/benchmarks-history.md). A vector with a value it does not write
 * (1 or more, or not finite) is left to `JSON.stringify` whole.
 */
export function writeVectorJson(vector: Float32Array, format: EncodingFormat, out: ByteWriter): void {
  if (format === 'base64') {
    out.text(`"${toBase64(vector)}"`);
    return;
  }
  const start = out.length;
  const buf = out.reserve(vector.length * BYTES_PER_VALUE + 2);
  // The same memory as 32-bit words, for each value's exponent field.
  const words = new Uint32Array(vector.buffer, vector.byteOffset, vector.length);
  let pos = start;
  buf[pos++] = 91; // [
  for (let i = 0; i < vector.length; i++) {
    if (i > 0) buf[pos++] = 44; // ,
    const x = vector[i]!;
    if (x === 0) {
      buf[pos++] = 48; // 0 (and -0, as JSON.stringify writes it)
      continue;
    }
    pos = x > -1 && x < 1 ? writeValue(x, (words[i]! >>> 23) & 255, buf, pos) : -1;
    if (pos < 0) {
      out.length = start;
      out.text(JSON.stringify(Array.from(vector)));
      return;
    }
  }
  buf[pos++] = 93; // ]
  out.length = pos;
}

/** The vector's JSON text as a string (writeVectorJson's bytes). */
export function vectorJson(vector: Float32Array, format: EncodingFormat): string {
  const out = new ByteWriter(vector.length * BYTES_PER_VALUE + 2);
  writeVectorJson(vector, format, out);
  return out.bytes().toString('latin1');
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
