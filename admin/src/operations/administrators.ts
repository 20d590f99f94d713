/**
 * Administrators of the admin core: named people with a role (viewer < operator < owner),
 * their tokens for scripts and the CLI, and authentication by token. A token is shown once and
 * stored only as its HMAC under the key-hash secret. Every change is audited under the acting
 * administrator's authenticated name; the last active owner cannot be demoted or disabled.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AdminRecord, AdminTokenRecord } from '../store/administrators.js';
import { combine } from '../store/changes.js';
import type { AdminDeps, Who } from './deps.js';
import { AdminError } from './errors.js';
import * as rules from './rules.js';

/** Minted tokens: `ctga_<id>_<secret>`; the id is public (listed, revoked by), the secret is not. */
const TOKEN_ID_BYTES = 6;
const MINT_ATTEMPTS = 5;
const ROLE_RANK: Readonly<Record<rules.Role, number>> = { viewer: 0, operator: 1, owner: 2 };

export interface AdminView {
  readonly name: string;
  readonly role: string;
  readonly disabled: boolean;
  readonly createdAt: string;
  readonly createdBy: string;
  readonly tokens: ReadonlyArray<{ id: string; createdAt: string; lastUsedAt: string | null }>;
}

/** An authenticated administrator. */
export interface Identity {
  readonly name: string;
  readonly role: rules.Role;
}

/** True when `role` includes what `needed` may do. */
export function roleAllows(role: rules.Role, needed: rules.Role): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[needed];
}

/** The actor string the audit trail records for an administrator. */
export const actorOf = (name: string): string => `admin:${name}`;

/** The public id of a minted administrator token (`ctga_<id>_<secret>`), or null: never its secret. */
export function tokenIdOf(token: string | null): string | null {
  return /^ctga_([0-9a-f]{12})_[\w-]+$/.exec(token ?? '')?.[1] ?? null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Administrator operations bound to `deps`. */
export function adminOperations(deps: AdminDeps) {
  const digest = (token: string): string => createHmac('sha256', deps.config.keyHashSecret).update(`admin-token:${token}`).digest('hex');
  const existing = async (name: unknown): Promise<AdminRecord> => {
    const admin = await deps.admins.get(rules.adminName(name));
    if (!admin) throw new AdminError('not_found', `no administrator ${String(name)}`);
    return admin;
  };
  const view = async (admin: AdminRecord): Promise<AdminView> => ({
    name: admin.name,
    role: admin.role,
    disabled: admin.disabled,
    createdAt: new Date(admin.createdAt).toISOString(),
    createdBy: admin.createdBy,
    tokens: (await deps.admins.tokensOf(admin.name)).map((t: AdminTokenRecord) => ({
      id: t.id,
      createdAt: new Date(t.createdAt).toISOString(),
      lastUsedAt: iso(t.lastUsedAt),
    })),
  });
  const activeOwners = async (): Promise<number> => (await deps.admins.list()).filter((a) => a.role === 'owner' && !a.disabled).length;
  const identity = async (name: string): Promise<Identity | null> => {
    const admin = await deps.admins.get(name);
    if (!admin || admin.disabled || !(rules.ROLES as readonly string[]).includes(admin.role)) return null;
    return { name: admin.name, role: admin.role as rules.Role };
  };
  const tokenRecord = (admin: string, id: string, who: Who): AdminTokenRecord => ({
    id,
    admin,
    createdAt: deps.now(),
    createdBy: who.actor,
    lastUsedAt: null,
  });

  return {
    /** Every administrator with their tokens' public facts. */
    async listAdmins(): Promise<{ admins: AdminView[] }> {
      return { admins: await Promise.all((await deps.admins.list()).map(view)) };
    },

    /** Adds an administrator (no token yet: one is created separately, or they sign in through OpenID Connect). */
    async createAdmin(input: { name?: unknown; role?: unknown }, who: Who): Promise<AdminView> {
      const admin: AdminRecord = {
        name: rules.adminName(input.name),
        role: rules.role(input.role),
        createdAt: deps.now(),
        createdBy: who.actor,
        disabled: false,
      };
      if (await deps.admins.get(admin.name)) throw new AdminError('conflict', `administrator ${admin.name} already exists`);
      await deps.journal.apply(
        { ...who, action: 'admin.create', target: `admin:${admin.name}`, detail: { role: admin.role } },
        deps.admins.createChange(admin),
      );
      return view(admin);
    },

    /** Changes a role or disables/enables an administrator; never leaves no active owner. */
    async updateAdmin(name: unknown, input: { role?: unknown; disabled?: unknown }, who: Who): Promise<AdminView> {
      const admin = await existing(name);
      const role = input.role === undefined ? admin.role : rules.role(input.role);
      if (input.disabled !== undefined && typeof input.disabled !== 'boolean')
        throw new AdminError('invalid', 'disabled: must be true or false');
      const disabled = input.disabled === undefined ? admin.disabled : input.disabled;
      const wasActiveOwner = admin.role === 'owner' && !admin.disabled;
      if (wasActiveOwner && (role !== 'owner' || disabled) && (await activeOwners()) <= 1)
        throw new AdminError('conflict', `${admin.name} is the last active owner`);
      const updated = { ...admin, role, disabled };
      const detail: Record<string, string | boolean> = {};
      if (input.role !== undefined) detail.role = role;
      if (input.disabled !== undefined) detail.disabled = disabled;
      await deps.journal.apply(
        { ...who, action: 'admin.update', target: `admin:${admin.name}`, detail },
        deps.admins.saveChange(updated, admin.version ?? 0),
      );
      return view(updated);
    },

    /** Creates a token for an administrator; the token is returned once. */
    async createAdminToken(name: unknown, who: Who): Promise<{ admin: string; id: string; token: string }> {
      const admin = await existing(name);
      for (let attempt = 0; attempt < MINT_ATTEMPTS; attempt += 1) {
        const id = randomBytes(TOKEN_ID_BYTES).toString('hex');
        const token = `ctga_${id}_${randomBytes(32).toString('base64url')}`;
        const hashed = digest(token);
        if (await deps.admins.tokenTaken(hashed, id)) continue;
        await deps.journal.apply(
          { ...who, action: 'admin.token.create', target: `admin:${admin.name}`, detail: { token: id } },
          deps.admins.addTokenChange(hashed, tokenRecord(admin.name, id, who), admin.version ?? 0),
        );
        return { admin: admin.name, id, token };
      }
      throw new Error('could not mint an unused token id');
    },

    /** Revokes one of an administrator's tokens. */
    async revokeAdminToken(name: unknown, id: unknown, who: Who): Promise<{ admin: string; id: string; revoked: true }> {
      const admin = await existing(name);
      const hashed = typeof id === 'string' && /^[0-9a-z-]{1,40}$/.test(id) ? await deps.admins.digestOf(admin.name, id) : null;
      if (typeof id !== 'string' || hashed === null) throw new AdminError('not_found', `${admin.name} has no token ${String(id)}`);
      await deps.journal.apply(
        { ...who, action: 'admin.token.revoke', target: `admin:${admin.name}`, detail: { token: id } },
        deps.admins.revokeTokenChange(admin.name, id, hashed, admin.version ?? 0, deps.now()),
      );
      return { admin: admin.name, id, revoked: true };
    },

    /** The enabled administrator holding `token`, or null. */
    async authenticateToken(token: string): Promise<Identity | null> {
      const found = await deps.admins.findToken(digest(token), deps.now());
      return found ? identity(found.admin) : null;
    },

    /** The enabled administrator `name` with their current role, or null. */
    identity,

    /** How many administrators exist (none: the CLI may bootstrap the first owner). */
    async countAdmins(): Promise<number> {
      return deps.admins.count();
    },

    /** Who holds the token with public id `id` (refusals name whose token was tried), or null. */
    async tokenOwner(id: string): Promise<string | null> {
      return deps.admins.ownerOfTokenId(id);
    },

    /**
     * Registers `token` (from ADMIN_TOKEN_FILE) as a token of the owner `name`, creating that
     * owner when missing: how a fresh local console gets its first administrator. Audited once.
     * A token that was revoked stays revoked: it is not registered again (`revoked`, audited).
     */
    async bootstrapOwner(name: string, token: string, who: Who): Promise<'registered' | 'known' | 'revoked'> {
      const hashed = digest(token);
      const id = `bootstrap-${hashed.slice(0, 8)}`;
      if (await deps.admins.findToken(hashed, deps.now())) return 'known';
      const owner = rules.adminName(name);
      if (await deps.admins.wasRevoked(hashed)) {
        await deps.audit.record({
          ...who,
          action: 'admin.bootstrap.refused',
          target: `admin:${owner}`,
          detail: { token: id, reason: 'revoked' },
        });
        return 'revoked';
      }
      const admin = await deps.admins.get(owner);
      if (admin && (admin.role !== 'owner' || admin.disabled))
        throw new AdminError('conflict', `ADMIN_BOOTSTRAP_NAME ${owner} exists but is not an active owner`);
      if (await deps.admins.tokenTaken(hashed, id)) throw new AdminError('conflict', `bootstrap token ${id} is already registered`);
      const addToken = deps.admins.addTokenChange(hashed, tokenRecord(owner, id, who), admin ? (admin.version ?? 0) : 'absent');
      const change = admin
        ? addToken
        : combine(
            deps.admins.createChange({ name: owner, role: 'owner', createdAt: deps.now(), createdBy: who.actor, disabled: false }),
            addToken,
          );
      await deps.journal.apply(
        { ...who, action: 'admin.bootstrap', target: `admin:${owner}`, detail: { token: id, created: !admin } },
        change,
      );
      return 'registered';
    },
  };
}
