/**
 * The shared records as Redis holds them, pinned: key names and hash fields exactly as authz and
 * admin wrote them before they were split (authz/README.md and admin/README.md list them), so a
 * Redis written by an older release is still read, and a change to a record's encoding fails
 * here before it strands data.
 */
import { describe, expect, it } from 'vitest';
import { accessKeys, decodeKey, decodeOrg, encodeKey, encodeOrg, type KeyRecord, type OrgRecord } from '../../contract/access-records.js';
import { hashSecret, isKeyId, keyShape, mintKey, parseKey } from '../../contract/api-key.js';
import { budgetKey, decodeBudget, encodeBudget } from '../../contract/budget.js';

const org: OrgRecord = { id: 'acme', endpoints: ['embeddings'], models: ['m1'], rpm: 60, tpm: null, createdAt: 1_700_000_000_000 };
const key: KeyRecord = { id: 'ABCDEFGHIJKL', org: 'acme', name: 'ci', hash: 'ab'.repeat(32), createdAt: 1, expiresAt: null, revoked: true };

describe('organization and key records', () => {
  it('live under the documented key names', () => {
    const keys = accessKeys('ctg:');
    expect([keys.orgs, keys.org('acme'), keys.orgKeys('acme'), keys.key('ABCDEFGHIJKL')]).toEqual([
      'ctg:orgs',
      'ctg:org:{acme}',
      'ctg:org:{acme}:keys',
      'ctg:key:ABCDEFGHIJKL',
    ]);
  });

  it('encode to the documented hash fields and decode back', () => {
    expect(encodeOrg(org)).toEqual({
      id: 'acme',
      endpoints: '["embeddings"]',
      models: '["m1"]',
      rpm: '60',
      tpm: '',
      created_at: '1700000000000',
    });
    expect(encodeKey(key)).toEqual({
      id: 'ABCDEFGHIJKL',
      org: 'acme',
      name: 'ci',
      hash: key.hash,
      created_at: '1',
      expires_at: '',
      revoked: '1',
    });
    expect(decodeOrg(encodeOrg(org))).toEqual(org);
    expect(decodeKey(encodeKey(key))).toEqual(key);
  });

  it("read an organization hash that also holds admin's fields, and refuse incomplete ones", () => {
    expect(decodeOrg({ ...encodeOrg(org), name: 'Acme', disabled: '1', held_endpoints: '["embeddings"]' })).toEqual(org);
    expect(decodeOrg({})).toBeNull();
    expect(decodeKey({ id: 'ABCDEFGHIJKL', org: 'acme' })).toBeNull();
    expect(decodeOrg({ id: 'x', endpoints: 'not json' })?.endpoints).toEqual([]);
  });
});

describe('budgets', () => {
  it('live in one documented hash per organization', () => {
    expect(budgetKey('ctg:', 'acme')).toBe('ctg:budget:{acme}');
    const budget = { monthlyTokens: 5000, hardStop: true, alertPercents: [80, 100] };
    expect(encodeBudget(budget)).toEqual({ monthly_tokens: '5000', hard_stop: '1', alerts: '80,100' });
    expect(decodeBudget(encodeBudget(budget))).toEqual(budget);
    expect(decodeBudget({})).toBeNull();
  });
});

describe('API keys', () => {
  it('keep their format and their hash: a key made before still verifies', () => {
    // The HMAC of "<id>:<secret>" under the key-hash secret, hex: what every stored key holds.
    expect(hashSecret('ABCDEFGHIJKL', 'S'.repeat(38), 'k'.repeat(32))).toBe(
      '89349d374241155f32671b022c5f7dd4d6d06d847a15a1ae610dec28f50f18ce',
    );
    const minted = mintKey('CTG');
    expect(minted.key).toMatch(/^CTG_[A-Z]{12}_[A-Z]{38}$/);
    expect(parseKey(minted.key, 'CTG')).toEqual({ id: minted.id, secret: minted.secret });
    expect(parseKey(minted.key, 'XYZ')).toBeNull();
    expect(isKeyId(minted.id)).toBe(true);
    expect(isKeyId('abcdefghijkl')).toBe(false);
    expect(keyShape('CTG')).toBe('CTG_<12 upper-case letters>_<38 upper-case letters>');
  });
});
