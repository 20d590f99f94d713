/**
 * The admin core: every operation the CLI and the console offer, one implementation each.
 * Front ends parse their input (flags, JSON bodies), say who is acting, and call these; the
 * operations validate with the same rules, change the store, and write the audit trail.
 */
import type { AuditRecord, Verdict } from '../audit/chain.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import { adminOperations } from './administrators.js';
import { budgetOperations } from './budgets.js';
import { auditQueries, MAX_AUDIT_PAGE } from './audit-queries.js';
import { keyOperations } from './keys.js';
import { orgOperations } from './orgs.js';
import { usageOperations } from './usage.js';

function auditOperations(deps: AdminDeps) {
  return {
    /** The most recent audit records, newest first. */
    async auditRecent(limit: unknown): Promise<{ records: AuditRecord[]; head: { seq: number; hash: string } }> {
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE)
        throw invalid('limit', `must be an integer from 1 to ${MAX_AUDIT_PAGE}`);
      const [records, head] = await Promise.all([deps.audit.recent(limit), deps.audit.head()]);
      return { records, head };
    },

    /** Records a sign-in (after the token or the provider's answer was checked). */
    async recordSignIn(who: Who, via: 'token' | 'oidc'): Promise<void> {
      await deps.audit.record({ ...who, action: 'session.create', target: 'session', detail: { via } });
    },

    /** Records a refused sign-in or token: who is unknown, so only where from and why. */
    async recordSignInFailure(from: string, detail: Readonly<Record<string, string | number | boolean>>): Promise<void> {
      await deps.audit.record({ actor: 'anonymous', from, action: 'session.fail', target: 'session', detail });
    },

    /** Records a console sign-out. */
    async recordSignOut(who: Who): Promise<void> {
      await deps.audit.record({ ...who, action: 'session.delete', target: 'session', detail: {} });
    },

    /** Checks the whole hash chain against its stored head. */
    auditVerify(): Promise<Verdict> {
      return deps.audit.verify();
    },
  };
}

/** Every admin operation, bound to one set of dependencies. */
export function createOperations(deps: AdminDeps) {
  return {
    ...orgOperations(deps),
    ...keyOperations(deps),
    ...usageOperations(deps),
    ...auditOperations(deps),
    ...adminOperations(deps),
    ...budgetOperations(deps),
    ...auditQueries(deps),
    now: deps.now,
  };
}

export type Operations = ReturnType<typeof createOperations>;
