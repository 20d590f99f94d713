/**
 * Organization operations of the admin core: create, change (name, models, endpoints, limit
 * overrides), show and list. Every change is recorded with the fields it set, then applied
 * (journal.ts), against the organization as read.
 */
import type { OrgProfile } from '../store/organizations.js';
import type { AdminDeps, Who } from './deps.js';
import { AdminError } from './errors.js';
import * as rules from './rules.js';
import { orgView, type OrgView } from './views.js';

export interface OrgInput {
  readonly id: unknown;
  readonly name?: unknown;
  readonly models?: readonly unknown[];
  readonly endpoints?: readonly unknown[];
  readonly rpm?: unknown;
  readonly tpm?: unknown;
}

export type OrgChanges = Omit<OrgInput, 'id'>;

/** The organization `id`, or a not_found AdminError. */
export async function existingOrg(deps: AdminDeps, id: unknown): Promise<OrgProfile> {
  const org = await deps.orgs.getOrg(rules.orgId(id));
  if (!org) throw new AdminError('not_found', `no organization ${String(id)}`);
  return org;
}

/** The validated changes, only the fields given. */
function changes(input: OrgChanges): Partial<Omit<OrgProfile, 'id' | 'createdAt'>> {
  const out: { -readonly [K in keyof Omit<OrgProfile, 'id' | 'createdAt'>]?: OrgProfile[K] } = {};
  if (input.name !== undefined) out.name = rules.displayName(input.name);
  if (input.models !== undefined) out.models = rules.modelIds(input.models);
  if (input.endpoints !== undefined) out.endpoints = rules.endpoints(input.endpoints);
  if (input.rpm !== undefined) out.rpm = rules.limit(input.rpm, 'rpm');
  if (input.tpm !== undefined) out.tpm = rules.limit(input.tpm, 'tpm');
  return out;
}

/** Organization operations bound to `deps`. */
export function orgOperations(deps: AdminDeps) {
  const defaults = { rpm: deps.config.defaultRpm, tpm: deps.config.defaultTpm };
  const view = (org: OrgProfile): OrgView => orgView(org, defaults);

  return {
    /** Creates an organization; no `models` grants the served model, [] grants none. */
    async createOrg(input: OrgInput, who: Who): Promise<OrgView> {
      const id = rules.orgId(input.id, 'id');
      const set = changes(input);
      const org: OrgProfile = {
        id,
        name: '',
        models: [deps.config.modelId],
        endpoints: [...rules.KNOWN_ENDPOINTS],
        rpm: null,
        tpm: null,
        createdAt: deps.now(),
        ...set,
      };
      if (await deps.orgs.getOrg(id)) throw new AdminError('conflict', `organization ${id} already exists`);
      const { name, models, endpoints, rpm, tpm } = org;
      await deps.journal.apply(
        { ...who, action: 'org.create', target: `org:${id}`, detail: { name, models, endpoints, rpm, tpm } },
        deps.orgs.createOrgChange(org),
      );
      return view(org);
    },

    /** Changes only the fields given; a null limit returns to the default. */
    async updateOrg(id: unknown, input: OrgChanges, who: Who): Promise<OrgView> {
      const org = await existingOrg(deps, id);
      const set = changes(input);
      if (org.disabled && set.endpoints !== undefined)
        throw new AdminError('conflict', `organization ${org.id} is disabled; enable it before changing its endpoints`);
      const updated: OrgProfile = { ...org, ...set };
      await deps.journal.apply(
        { ...who, action: 'org.update', target: `org:${org.id}`, detail: set },
        deps.orgs.saveOrgChange(updated, org.version ?? 0),
      );
      return view(updated);
    },

    /** Disables an organization: every key is refused (no endpoints) until it is enabled; keys, usage and audit stay. */
    async disableOrg(id: unknown, who: Who): Promise<OrgView> {
      const org = await existingOrg(deps, id);
      if (org.disabled) throw new AdminError('conflict', `organization ${org.id} is already disabled`);
      const updated: OrgProfile = { ...org, endpoints: [], disabled: true, heldEndpoints: org.endpoints };
      await deps.journal.apply(
        { ...who, action: 'org.disable', target: `org:${org.id}`, detail: { endpoints: org.endpoints } },
        deps.orgs.saveOrgChange(updated, org.version ?? 0),
      );
      return view(updated);
    },

    /** Enables a disabled organization with the endpoints it had. */
    async enableOrg(id: unknown, who: Who): Promise<OrgView> {
      const org = await existingOrg(deps, id);
      if (!org.disabled) throw new AdminError('conflict', `organization ${org.id} is not disabled`);
      const updated: OrgProfile = { ...org, endpoints: org.heldEndpoints ?? [], disabled: false, heldEndpoints: [] };
      await deps.journal.apply(
        { ...who, action: 'org.enable', target: `org:${org.id}`, detail: { endpoints: updated.endpoints } },
        deps.orgs.saveOrgChange(updated, org.version ?? 0),
      );
      return view(updated);
    },

    /** Deletes a disabled organization and its keys; its usage and audit records stay. */
    async deleteOrg(id: unknown, who: Who): Promise<{ id: string; deleted: true; keys: number }> {
      const org = await existingOrg(deps, id);
      if (!org.disabled) throw new AdminError('conflict', `disable organization ${org.id} before deleting it`);
      const keyIds = await deps.orgs.keyIdsOf(org.id);
      const keys = keyIds.length;
      await deps.journal.apply(
        { ...who, action: 'org.delete', target: `org:${org.id}`, detail: { keys } },
        deps.orgs.deleteOrgChange(org.id, keyIds, org.version ?? 0, deps.now()),
      );
      return { id: org.id, deleted: true, keys };
    },

    /** One organization and how many keys it has. */
    async showOrg(id: unknown): Promise<OrgView & { keys: number }> {
      const org = await existingOrg(deps, id);
      return { ...view(org), keys: (await deps.orgs.listKeys(org.id)).length };
    },

    /** Every organization, by id. */
    async listOrgs(): Promise<OrgView[]> {
      return (await deps.orgs.listOrgs()).map(view);
    },
  };
}
