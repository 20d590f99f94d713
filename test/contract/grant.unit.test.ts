/** The grant (contract/grant.ts): signed by authz, verified by the embedder; pure, clock passed in. */
import { describe, expect, it } from 'vitest';
import { GRANT_CLOCK_SKEW_MS, signGrant, verifyGrant, type GrantClaims } from '../../contract/grant.js';

const SECRET = 'grant-unit-test-secret-0123456789abcdef';
const NOW = Date.parse('2030-01-01T00:00:00Z');
const claims: GrantClaims = {
  org: 'acme',
  key: 'ABCDEFGHIJKL',
  model: 'm1',
  tpm: 1000,
  uid: '0b8f5c1e-2d3a-4f6b-9c7d-1e2f3a4b5c6d',
  exp: NOW + 90_000,
  method: 'POST',
  path: '/v1/embeddings',
};

describe('grants', () => {
  it('round-trips the claims', () => {
    expect(verifyGrant(signGrant(claims, SECRET), [SECRET], NOW)).toEqual({ ok: true, claims });
  });

  it('during a rotation verifies grants signed with the old or the new secret; refuses a dropped or never-issued one', () => {
    const OLD = SECRET;
    const NEW = `${SECRET}-rotated`;
    const byOld = signGrant(claims, OLD);
    const byNew = signGrant(claims, NEW);
    // Steps 1 and 2 of the rotation: both accepted, whichever signs (order does not matter).
    for (const accepted of [
      [OLD, NEW],
      [NEW, OLD],
    ]) {
      expect(verifyGrant(byOld, accepted, NOW)).toEqual({ ok: true, claims });
      expect(verifyGrant(byNew, accepted, NOW)).toEqual({ ok: true, claims });
      expect(verifyGrant(signGrant(claims, 'never-issued-secret-0123456789abcdef'), accepted, NOW)).toEqual({
        ok: false,
        fault: 'signature',
      });
    }
    // Step 3: the old one dropped.
    expect(verifyGrant(byOld, [NEW], NOW)).toEqual({ ok: false, fault: 'signature' });
    expect(verifyGrant(byNew, [NEW], NOW)).toEqual({ ok: true, claims });
    expect(verifyGrant(byNew, [], NOW)).toEqual({ ok: false, fault: 'signature' });
  });

  it('refuses another secret, any changed byte, and a swapped payload', () => {
    const signed = signGrant(claims, SECRET);
    expect(verifyGrant(signed, [`${SECRET}x`], NOW)).toEqual({ ok: false, fault: 'signature' });
    const [version, payload, mac] = signed.split('.');
    const other = signGrant({ ...claims, org: 'victim' }, 'another-secret-0123456789abcdefghijkl').split('.')[1];
    expect(verifyGrant(`${version}.${other}.${mac}`, [SECRET], NOW)).toEqual({ ok: false, fault: 'signature' });
    const flipped = `${mac!.slice(0, -2)}${mac!.endsWith('AA') ? 'AB' : 'AA'}`;
    expect(verifyGrant(`${version}.${payload}.${flipped}`, [SECRET], NOW)).toEqual({ ok: false, fault: 'signature' });
  });

  it('refuses a missing, malformed or other-version value', () => {
    expect(verifyGrant(undefined, [SECRET], NOW)).toEqual({ ok: false, fault: 'missing' });
    expect(verifyGrant(['a', 'b'], [SECRET], NOW)).toEqual({ ok: false, fault: 'missing' });
    expect(verifyGrant('v1.only-two', [SECRET], NOW)).toEqual({ ok: false, fault: 'malformed' });
    expect(verifyGrant(signGrant(claims, SECRET).replace(/^v1/, 'v2'), [SECRET], NOW)).toEqual({ ok: false, fault: 'malformed' });
  });

  it('refuses well-signed claims of the wrong shape (an identifier outside the rule, a negative limit)', () => {
    expect(verifyGrant(signGrant({ ...claims, org: 'a b' }, SECRET), [SECRET], NOW)).toEqual({ ok: false, fault: 'malformed' });
    expect(verifyGrant(signGrant({ ...claims, tpm: -1 }, SECRET), [SECRET], NOW)).toEqual({ ok: false, fault: 'malformed' });
    expect(verifyGrant(signGrant({ ...claims, model: '' }, SECRET), [SECRET], NOW)).toMatchObject({ ok: true });
  });

  it('expires, with a small allowance for clocks that differ', () => {
    const signed = signGrant(claims, SECRET);
    expect(verifyGrant(signed, [SECRET], claims.exp + GRANT_CLOCK_SKEW_MS)).toMatchObject({ ok: true });
    expect(verifyGrant(signed, [SECRET], claims.exp + GRANT_CLOCK_SKEW_MS + 1)).toEqual({ ok: false, fault: 'expired' });
  });
});
