/**
 * Access decisions, pure: given the presented key, the stored key and organization records,
 * the request's endpoint and model, and the time, decide who is calling and whether they may.
 */
import { secretMatches, type PresentedKey } from './keys.js';
import type { Deny } from './decision.js';

export interface KeyRecord {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly hash: string;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  readonly revoked: boolean;
}

export interface OrgRecord {
  readonly id: string;
  readonly endpoints: readonly string[];
  readonly models: readonly string[];
  /** Overrides of the default limits; null means "use the default". */
  readonly rpm: number | null;
  readonly tpm: number | null;
  readonly createdAt: number;
}

/** Who is calling, and the model whose limits apply. */
export interface Grant {
  readonly kind: 'grant';
  readonly org: OrgRecord;
  readonly keyId: string;
  readonly model: string;
}

export interface AccessRequest {
  readonly presented: PresentedKey;
  readonly key: KeyRecord | null;
  readonly org: OrgRecord | null;
  readonly endpoint: string | null;
  /** The body's `model`, or null when the body had none (the embedder answers 400). */
  readonly requestedModel: string | null;
  readonly servedModel: string;
  readonly serverSecret: string;
  readonly now: number;
}

const ENDPOINTS: Readonly<Record<string, string>> = { '/v1/embeddings': 'embeddings' };

/** Maps a request path (query string ignored) to its endpoint name, or null for none. */
export function endpointOf(path: string): string | null {
  const bare = path.split('?', 1)[0]!;
  return ENDPOINTS[bare] ?? null;
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
  const model = request.requestedModel ?? request.servedModel;
  if (request.requestedModel !== null && (model !== request.servedModel || !org.models.includes(model))) {
    return deny('model_not_enabled', 'The organization has no access to the requested model, or it does not exist.');
  }
  return { kind: 'grant', org, keyId: key.id, model };
}

function deny(code: Deny['code'], detail: string): Deny {
  return { kind: 'deny', code, detail };
}
