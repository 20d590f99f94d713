/**
 * Organizations and keys as every admin front end shows them: ISO times, the limits that
 * apply, a key's status. Never a key's secret or its hash.
 */
import type { KeyRecord } from '../../../contract/access-records.js';
import type { OrgProfile } from '../store/organizations.js';

export interface OrgView {
  readonly id: string;
  readonly name: string;
  readonly endpoints: readonly string[];
  readonly models: readonly string[];
  readonly rpm: number;
  readonly tpm: number;
  readonly rpmIsDefault: boolean;
  readonly tpmIsDefault: boolean;
  readonly createdAt: string;
  /** A disabled organization's keys are all refused (403 endpoint_not_enabled). */
  readonly disabled: boolean;
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

export interface KeyView {
  readonly id: string;
  readonly org: string;
  readonly name: string;
  readonly createdAt: string;
  readonly expiresAt: string | null;
  readonly revoked: boolean;
  readonly status: KeyStatus;
}

/** The organization with the limits that apply (its override, else the default). */
export function orgView(org: OrgProfile, defaults: { rpm: number; tpm: number }): OrgView {
  return {
    id: org.id,
    name: org.name,
    endpoints: org.endpoints,
    models: org.models,
    rpm: org.rpm ?? defaults.rpm,
    tpm: org.tpm ?? defaults.tpm,
    rpmIsDefault: org.rpm === null,
    tpmIsDefault: org.tpm === null,
    createdAt: new Date(org.createdAt).toISOString(),
    disabled: org.disabled === true,
  };
}

/** A key's status at `now`: revoked wins over expired. */
export function keyStatus(key: KeyRecord, now: number): KeyStatus {
  if (key.revoked) return 'revoked';
  return key.expiresAt !== null && now >= key.expiresAt ? 'expired' : 'active';
}

/** The key without its secret or hash. */
export function keyView(key: KeyRecord, now: number): KeyView {
  return {
    id: key.id,
    org: key.org,
    name: key.name,
    createdAt: new Date(key.createdAt).toISOString(),
    expiresAt: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    revoked: key.revoked,
    status: keyStatus(key, now),
  };
}
