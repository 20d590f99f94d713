/**
 * Refused administrative actions, recorded and bounded. Every refusal (a token or single sign-on
 * that does not verify, a role that does not allow the operation, a cross-site or CSRF-less
 * request) is counted per subject (the client address or the administrator first, then the
 * token id or identity tried) in a fixed window, and audited; past REFUSALS_PER_WINDOW from the
 * first subject in a window, only every power of two is audited (with the count so far), so
 * nobody can grow the trail without bound. Refused credentials past the limit for any subject
 * are answered 429 with `retry-after` instead of 401; a credential
 * that verifies is never refused (tokens carry 256 random bits, so guessing cannot succeed: the
 * limit bounds the noise, and one address's failures never lock out the valid tokens or
 * completed sign-ins that share it, such as everyone behind one proxy).
 */
import type { AuditEvent } from '../audit/chain.js';
import type { Operations } from '../operations/operations.js';
import type { SessionStore } from '../store/sessions.js';

const REFUSALS_PER_WINDOW = 10;
const WINDOW_MS = 5 * 60_000;

/** What a counted refusal comes to: whether its subject is over the limit, and until when. */
export interface Counted {
  readonly throttled: boolean;
  readonly retryAfterS: number;
}

const powerOfTwo = (n: number): boolean => (n & (n - 1)) === 0;

export class RefusalLog {
  constructor(
    private readonly store: SessionStore,
    private readonly ops: Pick<Operations, 'recordRefusal' | 'now'>,
  ) {}

  /**
   * Counts `event` under each of `subjects` and audits it while the first subject is within the
   * window's budget (as `throttledAction`, when given, once a subject is over the limit).
   */
  async refuse(subjects: readonly string[], event: AuditEvent, throttledAction?: string): Promise<Counted> {
    const counts = await this.store.refusal(subjects, WINDOW_MS);
    const { count, resetMs } = counts.reduce((a, b) => (b.count > a.count ? b : a));
    const throttled = count > REFUSALS_PER_WINDOW;
    const own = counts[0]!.count;
    if (own <= REFUSALS_PER_WINDOW + 1 || powerOfTwo(own)) {
      const detail: Record<string, string | number> = { refusals: count };
      if (throttled) detail.until = new Date(this.ops.now() + resetMs).toISOString();
      await this.ops.recordRefusal({
        ...event,
        action: throttled && throttledAction ? throttledAction : event.action,
        detail: { ...event.detail, ...detail },
      });
    }
    return { throttled, retryAfterS: Math.max(1, Math.ceil(resetMs / 1000)) };
  }
}
