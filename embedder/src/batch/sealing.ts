/**
 * Encryption at rest of batch files (clinical text): AES-256-GCM, envelope style. Each file has
 * its own random data key; the data key is stored only wrapped (sealed) by a key-encryption key
 * that comes from a Secret file, never from the store, so a copy of the store (a backup, a
 * stolen disk, a database dump) holds nothing readable. Every sealed piece is bound to its
 * name through GCM's additional data: a blob moved to another file's place fails to open.
 *
 * Rotation: the key file holds one or two keys (one per line); the first seals new data keys,
 * every listed key opens (each wrapped key names its key-encryption key by a short id).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 1;

/** A piece that failed to open: wrong key, altered bytes, or moved to another name. */
export class SealError extends Error {
  constructor(what: string) {
    super(`sealed data could not be opened (${what})`);
    this.name = 'SealError';
  }
}

/** The key-encryption keys: the first seals, all open. */
export interface KeyRing {
  readonly current: { readonly id: string; readonly key: Buffer };
  readonly accepted: ReadonlyMap<string, Buffer>;
}

const keyId = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

/**
 * Parses the key file's text: one or two keys, each 64 hex characters or base64 of 32 bytes.
 * Throws naming the line (never the key) when one is malformed.
 */
export function parseKeyRing(text: string): KeyRing {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  if (lines.length === 0 || lines.length > 2) throw new Error('must hold one or two keys, one per line');
  const keys = lines.map((line, i) => {
    const key = /^[0-9a-fA-F]{64}$/.test(line) ? Buffer.from(line, 'hex') : Buffer.from(line, 'base64');
    if (key.length !== KEY_BYTES || (!/^[0-9a-fA-F]{64}$/.test(line) && key.toString('base64') !== line)) {
      throw new Error(`line ${i + 1} must be 32 bytes as 64 hex characters or base64`);
    }
    return key;
  });
  const first = keys[0]!;
  return { current: { id: keyId(first), key: first }, accepted: new Map(keys.map((key) => [keyId(key), key])) };
}

function seal(key: Buffer, plain: Buffer, bindTo: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, nonce);
  cipher.setAAD(Buffer.from(bindTo, 'utf8'));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]);
}

function open(key: Buffer, sealed: Buffer, bindTo: string): Buffer {
  if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new SealError('format');
  const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
  const tag = sealed.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
  const decipher = createDecipheriv(ALGORITHM, key, nonce);
  decipher.setAAD(Buffer.from(bindTo, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new SealError('authentication');
  }
}

/** A data key in the clear (memory only) and its wrapped form (what the store keeps). */
export interface DataKey {
  readonly key: Buffer;
  readonly wrapped: string;
}

/** A fresh data key for `owner` (a file or batch id), wrapped by the ring's current key. */
export function newDataKey(ring: KeyRing, owner: string): DataKey {
  const key = randomBytes(KEY_BYTES);
  return { key, wrapped: wrapDataKey(ring, key, owner) };
}

function wrapDataKey(ring: KeyRing, key: Buffer, owner: string): string {
  return `v1.${ring.current.id}.${seal(ring.current.key, key, `dek:${owner}`).toString('base64url')}`;
}

/** Opens a wrapped data key of `owner`; throws SealError when no accepted key opens it. */
export function unwrapDataKey(ring: KeyRing, wrapped: string, owner: string): Buffer {
  const [version, id, body] = wrapped.split('.');
  const kek = id ? ring.accepted.get(id) : undefined;
  if (version !== 'v1' || !kek || !body) throw new SealError('key-encryption key not accepted');
  return open(kek, Buffer.from(body, 'base64url'), `dek:${owner}`);
}

/** Seals `plain` with a data key, bound to the object's `name`. */
export function sealObject(key: Buffer, plain: Buffer, name: string): Buffer {
  return seal(key, plain, `obj:${name}`);
}

/** Opens an object sealed under `name`; throws SealError when altered, moved or under another key. */
export function openObject(key: Buffer, sealed: Buffer, name: string): Buffer {
  return open(key, sealed, `obj:${name}`);
}

/** Bytes sealed or opened between two yields to the event loop: about a millisecond of AES-GCM. */
const SLICE_BYTES = 1 << 20;

/**
 * `sealObject` in slices, yielding to the event loop between them: a batch segment's result is
 * megabytes, and the online requests served by the same event loop must not wait behind it.
 */
export async function sealObjectSliced(key: Buffer, plain: Buffer, name: string): Promise<Buffer> {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, nonce);
  cipher.setAAD(Buffer.from(`obj:${name}`, 'utf8'));
  const parts: Buffer[] = [];
  for (let at = 0; at < plain.length; at += SLICE_BYTES) {
    parts.push(cipher.update(plain.subarray(at, at + SLICE_BYTES)));
    if (at + SLICE_BYTES < plain.length) await yieldToLoop();
  }
  parts.push(cipher.final());
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), ...parts]);
}

/** `openObject` in slices (see sealObjectSliced); the tag is checked at the end, before anything is returned. */
export async function openObjectSliced(key: Buffer, sealed: Buffer, name: string): Promise<Buffer> {
  if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new SealError('format');
  const decipher = createDecipheriv(ALGORITHM, key, sealed.subarray(1, 1 + NONCE_BYTES));
  decipher.setAAD(Buffer.from(`obj:${name}`, 'utf8'));
  decipher.setAuthTag(sealed.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES));
  const body = sealed.subarray(1 + NONCE_BYTES + TAG_BYTES);
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += SLICE_BYTES) {
    parts.push(decipher.update(body.subarray(at, at + SLICE_BYTES)));
    if (at + SLICE_BYTES < body.length) await yieldToLoop();
  }
  try {
    parts.push(decipher.final());
  } catch {
    throw new SealError('authentication');
  }
  return Buffer.concat(parts);
}
