/**
 * Access decisions, pure: given the presented key, the stored key and organization records,
 * the request's endpoint and the time, decide who is calling and whether they may. Decided on
 * headers alone (no body has been read): the model grant says whether the organization may use
 * the served model, and the embedder serves a body's `model` only when it matches that grant.
 */
import type { KeyRecord, OrgRecord } from '../../../contract/access-records.js';
import { secretMatches, type PresentedKey } from '../../../contract/api-key.js';
import type { Deny } from './decision.js';

/** Who is calling, the model whose limits apply, and whether the organization may use it. */
export interface Grant {
  readonly kind: 'grant';
  readonly org: OrgRecord;
  readonly keyId: string;
  /** The served model: its limits apply to every request of the endpoint. */
  readonly model: string;
  /** True when the organization may use the served model; the embedder refuses it otherwise. */
  readonly modelEnabled: boolean;
}

export interface AccessRequest {
  readonly presented: PresentedKey;
  readonly key: KeyRecord | null;
  readonly org: OrgRecord | null;
  readonly endpoint: string | null;
  readonly servedModel: string;
  readonly serverSecret: string;
  readonly now: number;
}

// Listing the models is part of embedding: the SDKs and tools list before they embed, so the
// models paths follow the embeddings grant (an organization sees only its models anyway).
const ENDPOINTS: Readonly<Record<string, string>> = { '/v1/embeddings': 'embeddings', '/v1/models': 'embeddings' };
const MODEL_PATH = /^\/v1\/models\/[^/]+$/;

/** The Batch API's paths run /v1/embeddings' work, so they belong to its endpoint. */
const BATCH_PATHS = /^\/v1\/(files(\/file-[0-9a-f]{24}(\/content)?)?|batches(\/batch_[0-9a-f]{24}(\/cancel)?)?)$/;

/** Maps a request path (query string ignored) to its endpoint name, or null for none. */
export function endpointOf(path: string): string | null {
  const bare = path.split('?', 1)[0]!;
  return ENDPOINTS[bare] ?? (MODEL_PATH.test(bare) || BATCH_PATHS.test(bare) ? 'embeddings' : null);
}

/** Decides whether the request may proceed to the rate limit. */
export function decideAccess(request: AccessRequest): Grant | Deny {
  const { presented, key, org, now } = request;
  // Unknown id and wrong secret answer alike, so the reply does not reveal which ids exist;
  // revocation and expiry are only told to someone holding the real secret.
  if (!key || !secretMatches(presented, key.hash, request.serverSecret)) {
    return deny('invalid_api_key', 'The API key is not valid.');
  }
  if (key.revoked) return deny('revoked_api_key', 'The API key has been revoked.');
  if (key.expiresAt !== null && now >= key.expiresAt) {
    return deny('expired_api_key', `The API key expired at ${new Date(key.expiresAt).toISOString()}.`);
  }
  if (!org) return deny('invalid_api_key', 'The API key belongs to no existing organization.');
  if (request.endpoint === null || !org.endpoints.includes(request.endpoint)) {
    return deny('endpoint_not_enabled', 'The organization has no access to this endpoint.');
  }
  const model = request.servedModel;
  return { kind: 'grant', org, keyId: key.id, model, modelEnabled: org.models.includes(model) };
}

function deny(code: Deny['code'], detail: string): Deny {
  return { kind: 'deny', code, detail };
}
