/**
 * The sign-in throttle: at most SIGN_IN_FAILURES refused tokens (sign-in or bearer) per client
 * address per window, then 429 until the window ends. Each counted failure is audited, so the
 * trail shows an attack without growing by more than that many records per address and window.
 */
import type { SessionStore } from '../store/sessions.js';
import type { Operations } from '../operations/operations.js';
import { AdminHttpError } from './problems.js';

const SIGN_IN_FAILURES = 10;
const SIGN_IN_WINDOW_MS = 5 * 60_000;

export class SignInThrottle {
  constructor(
    private readonly store: SessionStore,
    private readonly ops: Pick<Operations, 'recordSignInFailure'>,
  ) {}

  /** Refuses (429) a client that has used up its failures in this window. */
  async check(client: string): Promise<void> {
    const { count, resetMs } = await this.store.failures(client);
    if (count >= SIGN_IN_FAILURES) throw this.refusal(resetMs);
  }

  /** Counts and audits one refused token; `reason` says which check it failed. */
  async fail(client: string, reason: string): Promise<void> {
    const { count } = await this.store.failure(client, SIGN_IN_WINDOW_MS);
    if (count <= SIGN_IN_FAILURES)
      await this.ops.recordSignInFailure(client, { reason, failures: count, throttled: count === SIGN_IN_FAILURES });
  }

  private refusal(resetMs: number): AdminHttpError {
    const seconds = Math.max(1, Math.ceil(resetMs / 1000));
    return new AdminHttpError('too_many_sign_in_attempts', `too many refused tokens from this address; try again in ${seconds} s`, {
      'retry-after': String(seconds),
    });
  }
}
