/** Encryption at rest: AES-256-GCM data keys wrapped by the key file's keys, each piece bound to its name. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  SealError,
  newDataKey,
  openObject,
  openObjectSliced,
  parseKeyRing,
  sealObject,
  sealObjectSliced,
  unwrapDataKey,
} from '../../embedder/src/batch/sealing.js';

const hexKey = () => randomBytes(32).toString('hex');

describe('sealing', () => {
  it('round-trips an object under a fresh data key, and the sealed bytes hold no plain text', () => {
    const ring = parseKeyRing(`${hexKey()}\n`);
    const data = newDataKey(ring, 'file-1');
    const plain = Buffer.from('Patient denies chest pain. CANARY-SEAL');
    const sealed = sealObject(data.key, plain, 'in-file-1/0');
    expect(sealed.includes(Buffer.from('CANARY-SEAL'))).toBe(false);
    expect(openObject(unwrapDataKey(ring, data.wrapped, 'file-1'), sealed, 'in-file-1/0').equals(plain)).toBe(true);
  });

  it('refuses an altered byte, a piece moved to another name, and a key wrapped for another owner', () => {
    const ring = parseKeyRing(hexKey());
    const data = newDataKey(ring, 'file-1');
    const sealed = sealObject(data.key, Buffer.from('text'), 'in-file-1/0');
    const altered = Buffer.from(sealed);
    altered[altered.length - 1]! ^= 1;
    expect(() => openObject(data.key, altered, 'in-file-1/0')).toThrow(SealError);
    expect(() => openObject(data.key, sealed, 'in-file-1/1')).toThrow(SealError);
    expect(() => unwrapDataKey(ring, data.wrapped, 'file-2')).toThrow(SealError);
  });

  it('rotates: keys wrapped by the old key open while it is listed second, and not once it is dropped', () => {
    const [oldKey, newKey] = [hexKey(), hexKey()];
    const before = newDataKey(parseKeyRing(oldKey), 'file-1');
    const during = parseKeyRing(`${newKey}\n${oldKey}`);
    expect(unwrapDataKey(during, before.wrapped, 'file-1').equals(before.key)).toBe(true);
    const fresh = newDataKey(during, 'file-2');
    expect(fresh.wrapped.split('.')[1]).toBe(during.current.id);
    expect(() => unwrapDataKey(parseKeyRing(newKey), before.wrapped, 'file-1')).toThrow(SealError);
  });

  it('seals and opens megabytes in slices, in the same format, and still refuses an altered byte', async () => {
    const key = randomBytes(32);
    const plain = randomBytes(3 * 1024 * 1024 + 17);
    const sliced = await sealObjectSliced(key, plain, 'out-b/0');
    expect(openObject(key, sliced, 'out-b/0').equals(plain)).toBe(true);
    expect((await openObjectSliced(key, sealObject(key, plain, 'out-b/0'), 'out-b/0')).equals(plain)).toBe(true);
    sliced[sliced.length - 5]! ^= 1;
    await expect(openObjectSliced(key, sliced, 'out-b/0')).rejects.toThrow(SealError);
  });

  it('accepts 64 hex characters or base64 of 32 bytes, one or two lines, and nothing else', () => {
    expect(parseKeyRing(randomBytes(32).toString('base64')).accepted.size).toBe(1);
    expect(() => parseKeyRing('')).toThrow(/one or two keys/);
    expect(() => parseKeyRing(`${hexKey()}\n${hexKey()}\n${hexKey()}`)).toThrow(/one or two keys/);
    expect(() => parseKeyRing('abc')).toThrow(/line 1/);
  });
});
