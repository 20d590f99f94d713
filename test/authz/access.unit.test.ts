import { describe, expect, it } from 'vitest';
import { decideAccess, endpointOf, type AccessRequest } from '../../authz/src/policy/access.js';
import type { KeyRecord, OrgRecord } from '../../contract/access-records.js';
import { hashSecret } from '../../contract/api-key.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const SERVER_SECRET = 'unit-test-server-secret-0123456789abcdef';
const presented = { id: 'ABCDEFGHIJKL', secret: 'S'.repeat(38) };
const key: KeyRecord = {
  id: presented.id,
  org: 'acme',
  name: 'ci',
  hash: hashSecret(presented.id, presented.secret, SERVER_SECRET),
  createdAt: NOW - 1000,
  expiresAt: null,
  revoked: false,
};
const org: OrgRecord = { id: 'acme', endpoints: ['embeddings'], models: ['m1'], rpm: null, tpm: null, createdAt: NOW - 2000 };

function request(overrides: Partial<AccessRequest> = {}): AccessRequest {
  return { presented, key, org, endpoint: 'embeddings', servedModel: 'm1', serverSecret: SERVER_SECRET, now: NOW, ...overrides };
}

describe('endpointOf', () => {
  it('maps /v1/embeddings and the models paths (with or without a query) to embeddings, and nothing else', () => {
    expect(endpointOf('/v1/embeddings')).toBe('embeddings');
    expect(endpointOf('/v1/embeddings?x=1')).toBe('embeddings');
    expect(endpointOf('/v1/completions')).toBeNull();
    expect(endpointOf('/v1/embeddings/')).toBeNull();
    // The models paths follow the embeddings grant.
    expect(endpointOf('/v1/models')).toBe('embeddings');
    expect(endpointOf('/v1/models/all-MiniLM-L6-v2-int8?x=1')).toBe('embeddings');
    expect(endpointOf('/v1/models/')).toBeNull();
    expect(endpointOf('/v1/models/a/b')).toBeNull();
  });

  it("maps the Batch API paths (their work is /v1/embeddings') to embeddings, with ids of their exact shape only", () => {
    const file = `file-${'a'.repeat(24)}`;
    const batch = `batch_${'b'.repeat(24)}`;
    for (const path of [
      '/v1/files',
      `/v1/files/${file}`,
      `/v1/files/${file}/content`,
      '/v1/batches?limit=2',
      `/v1/batches/${batch}`,
      `/v1/batches/${batch}/cancel`,
    ]) {
      expect(endpointOf(path), path).toBe('embeddings');
    }
    for (const path of ['/v1/files/x', `/v1/files/${file}/other`, `/v1/batches/${batch}/cancel/x`, '/v1/filesx'])
      expect(endpointOf(path), path).toBeNull();
  });
});

describe('decideAccess', () => {
  it('grants a valid key on an enabled endpoint and model', () => {
    expect(decideAccess(request())).toEqual({ kind: 'grant', org, keyId: key.id, model: 'm1', modelEnabled: true });
  });

  it('answers unknown ids and wrong secrets alike: invalid_api_key', () => {
    expect(decideAccess(request({ key: null }))).toMatchObject({ code: 'invalid_api_key' });
    expect(decideAccess(request({ presented: { ...presented, secret: 'T'.repeat(38) } }))).toMatchObject({ code: 'invalid_api_key' });
  });

  it('tells revocation and expiry only to the holder of the real secret', () => {
    expect(decideAccess(request({ key: { ...key, revoked: true } }))).toMatchObject({ code: 'revoked_api_key' });
    expect(decideAccess(request({ key: { ...key, revoked: true }, presented: { ...presented, secret: 'T'.repeat(38) } }))).toMatchObject({
      code: 'invalid_api_key',
    });
    expect(decideAccess(request({ key: { ...key, expiresAt: NOW } }))).toMatchObject({ code: 'expired_api_key' });
    expect(decideAccess(request({ key: { ...key, expiresAt: NOW + 1 } }))).toMatchObject({ kind: 'grant' });
  });

  it('refuses a key whose organization is gone', () => {
    expect(decideAccess(request({ org: null }))).toMatchObject({ code: 'invalid_api_key' });
  });

  it('answers endpoint_not_enabled for a disabled or unknown endpoint', () => {
    expect(decideAccess(request({ org: { ...org, endpoints: [] } }))).toMatchObject({ code: 'endpoint_not_enabled' });
    expect(decideAccess(request({ endpoint: null }))).toMatchObject({ code: 'endpoint_not_enabled' });
  });

  it('grants the served model only to an organization that has it (decided on headers alone)', () => {
    expect(decideAccess(request({ org: { ...org, models: [] } }))).toMatchObject({ kind: 'grant', model: 'm1', modelEnabled: false });
    expect(decideAccess(request({ org: { ...org, models: ['other'] } }))).toMatchObject({
      kind: 'grant',
      model: 'm1',
      modelEnabled: false,
    });
    expect(decideAccess(request({ servedModel: 'other', org: { ...org, models: ['m1', 'other'] } }))).toMatchObject({
      model: 'other',
      modelEnabled: true,
    });
  });
});
