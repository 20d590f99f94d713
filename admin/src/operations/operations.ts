/**
 * The admin core: every operation the CLI and the console offer, one implementation each.
 * Front ends parse their input (flags, JSON bodies), say who is acting, and call these; the
 * operations validate with the same rules, change the store, and write the audit trail.
 */
import type { AuditEvent, AuditRecord } from '../audit/chain.js';
import { fingerprint, publicKeyPem } from '../audit/signing.js';
import type { Verdict } from '../audit/verify.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import { adminOperations } from './administrators.js';
import { billingOperations } from './billing.js';
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

    /** Records a refused administrative action: a failed sign-in, a forbidden or cross-site request, a throttled attempt. */
    async recordRefusal(event: AuditEvent): Promise<void> {
      await deps.audit.record(event);
    },

    /** Records a console sign-out. */
    async recordSignOut(who: Who): Promise<void> {
      await deps.audit.record({ ...who, action: 'session.delete', target: 'session', detail: {} });
    },

    /** Checks the whole chain as stored against its head, its signatures and the checkpoints outside Redis. */
    auditVerify(): Promise<Verdict> {
      return deps.audit.verify();
    },

    /** The trail's public key (PEM), its fingerprint and the trail's name: what an auditor verifies with. */
    auditPublicKey(): { trail: string; publicKey: string; fingerprint: string } {
      const key = deps.audit.publicKey;
      return { trail: deps.audit.trail, publicKey: publicKeyPem(key), fingerprint: fingerprint(key) };
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
    ...billingOperations(deps),
    ...auditQueries(deps),
    now: deps.now,
  };
}

export type Operations = ReturnType<typeof createOperations>;
