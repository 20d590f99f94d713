import { describe, expect, it } from 'vitest';
import { parseAuthorization } from '../../authz/src/policy/keys.js';
import { hashSecret, mintKey, parseKey, secretMatches } from '../../contract/api-key.js';
import { isDeny } from '../../authz/src/policy/decision.js';

const ID = 'ABCDEFGHIJKL';
const SECRET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKL';
const KEY = `CTG_${ID}_${SECRET}`;
const SERVER_SECRET = 'unit-test-server-secret-0123456789abcdef';

describe('parseAuthorization', () => {
  it('accepts a well-formed Bearer key and splits id from secret', () => {
    expect(parseAuthorization(`Bearer ${KEY}`, 'CTG')).toEqual({ id: ID, secret: SECRET });
    expect(parseAuthorization(`bearer   ${KEY}  `, 'CTG')).toEqual({ id: ID, secret: SECRET });
  });

  it.each([undefined, '', '   '])('answers missing_api_key for %j', (header) => {
    expect(parseAuthorization(header, 'CTG')).toMatchObject({ kind: 'deny', code: 'missing_api_key' });
  });

  it.each([
    ['another scheme', `Basic ${KEY}`],
    ['scheme only', 'Bearer'],
    ['no scheme', KEY],
    ['extra token', `Bearer ${KEY} extra`],
  ])('answers malformed_api_key for %s', (_label, header) => {
    const result = parseAuthorization(header, 'CTG');
    expect(result).toMatchObject({ kind: 'deny', code: 'malformed_api_key' });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('never echoes the presented key in a detail', () => {
    const result = parseAuthorization('Bearer CTG_CANARYSECRETVALUE', 'CTG');
    expect(isDeny(result) && result.detail).not.toContain('CANARYSECRETVALUE');
  });
});

describe('parseKey', () => {
  it.each([
    ['wrong prefix', `XYZ_${ID}_${SECRET}`],
    ['lower-case prefix', `ctg_${ID}_${SECRET}`],
    ['no prefix', `${ID}_${SECRET}`],
    ['id too short', `CTG_${ID.slice(1)}_${SECRET}`],
    ['id too long', `CTG_${ID}M_${SECRET}`],
    ['secret too short', `CTG_${ID}_${SECRET.slice(1)}`],
    ['secret too long', `CTG_${ID}_${SECRET}A`],
    ['lower-case id', `CTG_${ID.toLowerCase()}_${SECRET}`],
    ['lower-case secret', `CTG_${ID}_${SECRET.toLowerCase()}`],
    ['digit in id', `CTG_ABCDEFGHIJK1_${SECRET}`],
    ['digit in secret', `CTG_${ID}_${SECRET.slice(0, -1)}9`],
    ['extra segment', `CTG_${ID}_${SECRET}_X`],
    ['dash separators', `CTG-${ID}-${SECRET}`],
    ['non-ASCII letter', `CTG_ABCDEFGHIJKÄ_${SECRET}`],
    ['empty', ''],
  ])('rejects %s', (_label, key) => {
    expect(parseKey(key, 'CTG')).toBeNull();
  });

  it('honours a configured prefix', () => {
    expect(parseKey(`ACME_${ID}_${SECRET}`, 'ACME')).toEqual({ id: ID, secret: SECRET });
    expect(parseKey(KEY, 'ACME')).toBeNull();
  });
});

describe('mintKey', () => {
  it('mints keys of the documented shape that parse back', () => {
    const minted = mintKey('CTG');
    expect(minted.key).toMatch(/^CTG_[A-Z]{12}_[A-Z]{38}$/);
    expect(parseKey(minted.key, 'CTG')).toEqual({ id: minted.id, secret: minted.secret });
    expect(mintKey('CTG').key).not.toBe(minted.key);
  });
});

describe('hashSecret and secretMatches', () => {
  const stored = hashSecret(ID, SECRET, SERVER_SECRET);

  it('stores a 32-byte HMAC, never the secret', () => {
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(stored).not.toContain(SECRET);
    expect(hashSecret(ID, SECRET, `${SERVER_SECRET}x`)).not.toBe(stored);
  });

  it('binds the key id into the hash', () => {
    expect(hashSecret('ZZZZZZZZZZZZ', SECRET, SERVER_SECRET)).not.toBe(stored);
  });

  it('matches only the right secret under the right server secret', () => {
    expect(secretMatches({ id: ID, secret: SECRET }, stored, SERVER_SECRET)).toBe(true);
    expect(secretMatches({ id: ID, secret: `${SECRET.slice(0, -1)}M` }, stored, SERVER_SECRET)).toBe(false);
    expect(secretMatches({ id: ID, secret: SECRET }, stored, 'another-server-secret-0123456789abcdef')).toBe(false);
  });

  it('refuses a stored hash of the wrong length instead of throwing', () => {
    expect(secretMatches({ id: ID, secret: SECRET }, stored.slice(2), SERVER_SECRET)).toBe(false);
    expect(secretMatches({ id: ID, secret: SECRET }, '', SERVER_SECRET)).toBe(false);
  });
});
