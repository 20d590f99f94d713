/**
 * One request's settlement on Redis, exactly once both ways: its tokens admitted before any
 * model work; its usage recorded before its 200 leaves; its tokens refunded when it will not be
 * answered 200; and never a usage record for a request answered anything but 200.
 *
 * The last is the hard one: a record command can reach Redis after the embedder stopped waiting
 * (Redis stalled, a connection reset). So every record carries a deadline on Redis's own clock,
 * which the function checks before writing (contract/redis/settlement.lua). The embedder learns
 * Redis's clock from Admit's reply and counts forward on its own monotonic clock; once its wait
 * is over, Redis's clock is past the deadline and a late command writes nothing. If the answer
 * was lost, one read of the settlement's state tells whether it was written.
 */
import { randomUUID } from 'node:crypto';
import { budgetRefusal } from '../../../contract/budget.js';
import type { GrantClaims } from '../../../contract/grant.js';
import { REQUEST_ID_RULE } from '../../../contract/request-id.js';
import { ProblemError } from '../../../openapi/problems.js';
import { SettlementUnavailableError, type AdmitReply, type SettlementStore } from './store.js';

export interface SettlementOptions {
  /** How long the embedder waits for one admit, and for a record (retries included). */
  readonly timeoutMs: number;
  readonly retryAfterSeconds: number;
  /** Wall clock (ms since the epoch) and monotonic clock (ms); injected in tests. */
  readonly now?: () => number;
  readonly monotonic?: () => number;
}

/** Past the deadline on the local clock, Redis's clock is surely past it too (TIME is whole ms). */
const FENCE_MARGIN_MS = 5;
const RETRY_PAUSE_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Settles one granted request; create it once the grant is verified and the model known. */
export class RequestSettlement {
  private tokens = 0;
  private admitted = false;
  private recorded = false;
  /** Redis's clock at Admit, and the local monotonic time its answer arrived. */
  private redisAt = { redis: 0, local: 0 };
  private readonly requestId: string;
  private readonly now: () => number;
  private readonly monotonic: () => number;
  /** The token rate-limit headers, once Admit answered. */
  headers: Record<string, string> = {};
  /** Why Admit refused, when it did. */
  refusal: ProblemError | undefined;

  constructor(
    private readonly store: SettlementStore,
    private readonly grant: GrantClaims,
    private readonly model: string,
    requestId: string,
    private readonly options: SettlementOptions,
  ) {
    this.requestId = REQUEST_ID_RULE.test(requestId) ? requestId : randomUUID();
    this.now = options.now ?? Date.now;
    this.monotonic = options.monotonic ?? (() => performance.now());
  }

  /** Charges `tokens`; false (with `refusal` set) when the budget cannot take them. */
  async admit(tokens: number): Promise<boolean> {
    this.tokens = tokens;
    let reply: AdmitReply;
    try {
      reply = await this.store.admit(this.grant, this.model, tokens, this.now());
    } catch (error) {
      // It may still be applied late: a refund queued behind it gives the tokens back.
      this.admitted = true;
      this.refund();
      throw this.unavailable(error);
    }
    this.redisAt = { redis: reply.redisNow, local: this.monotonic() };
    if (reply.kind === 'admitted') {
      this.headers = tokenHeaders(this.grant.tpm, reply.tokensRemaining);
      this.admitted = true;
      return true;
    }
    if (reply.kind === 'over_limit') {
      this.headers = tokenHeaders(this.grant.tpm, reply.tokensRemaining);
      const wait = { ...this.headers, 'retry-after': String(Math.max(1, Math.ceil(reply.retryAfterMs / 1000))) };
      this.refusal = new ProblemError(
        'rate_limit_exceeded',
        `The organization's tokens-per-minute limit (${this.grant.tpm}) for this model cannot take this request's ${tokens} tokens now.`,
        wait,
      );
      return false;
    }
    if (reply.kind === 'too_large') {
      this.headers = tokenHeaders(this.grant.tpm, this.grant.tpm);
      this.refusal = new ProblemError(
        'invalid_request',
        `This request has ${tokens} tokens, more than the organization's whole tokens-per-minute limit (${this.grant.tpm}) for this model; no wait will admit it: split it into smaller requests.`,
        this.headers,
      );
      return false;
    }
    if (reply.kind === 'over_budget') {
      const deny = budgetRefusal(reply.budgetTokens, reply.usedTokens, this.now());
      this.refusal = new ProblemError(deny.code, deny.detail, { 'retry-after': String(deny.retryAfterSeconds) });
      return false;
    }
    // An unknown, expired or already used grant serves nothing: a grant admits one request. A
    // legitimate retry (Envoy's, to another replica) goes back through Check for a new one.
    this.refusal = this.unavailable(new Error(`grant ${reply.kind}`));
    return false;
  }

  /**
   * Records the usage before the 200; throws a 503 problem (after refunding) when it cannot be
   * recorded within the wait, in which case Redis will never write it.
   */
  async record(): Promise<void> {
    const started = this.monotonic();
    const deadline = this.redisAt.redis + Math.ceil(started - this.redisAt.local) + this.options.timeoutMs;
    const usage = { requestId: this.requestId, tokens: this.tokens };
    let lastError: unknown = new Error('no attempt');
    while (this.monotonic() < started + this.options.timeoutMs) {
      try {
        const reply = await this.store.record(this.grant, this.model, usage, deadline);
        if (reply === 'recorded') {
          this.recorded = true;
          return;
        }
        if (reply === 'unreplicated') {
          // Taken back (usage deleted, tokens and budget given back): never a 200 for it.
          this.admitted = false;
          throw this.unavailable(new SettlementUnavailableError('the replicas did not confirm the usage record'));
        }
        lastError = new Error(`record ${reply}`);
        break;
      } catch (error) {
        if (error instanceof ProblemError) throw error;
        lastError = error;
        await sleep(RETRY_PAUSE_MS);
      }
    }
    // The wait is over: a command still on its way will find Redis's clock past the deadline.
    const fence = started + this.options.timeoutMs + FENCE_MARGIN_MS - this.monotonic();
    if (fence > 0) await sleep(fence);
    if (await this.recordedAfterAll()) {
      this.recorded = true;
      return;
    }
    this.refund();
    throw this.unavailable(lastError);
  }

  /** Gives the tokens back when they were charged and not recorded; best effort, never throws. */
  refund(onError: (error: unknown) => void = () => undefined): void {
    if (!this.admitted || this.recorded) return;
    this.admitted = false;
    this.store.refund(this.grant, this.model, this.now()).catch(onError);
  }

  // A record whose answer was lost may have been written: the state says.
  private async recordedAfterAll(): Promise<boolean> {
    try {
      return (await this.store.status(this.grant)).startsWith('u:');
    } catch {
      return false;
    }
  }

  private unavailable(cause: unknown): ProblemError {
    const reason = cause instanceof SettlementUnavailableError ? 'store' : 'refused';
    return new ProblemError(
      'authorization_unavailable',
      `The gateway cannot settle this request now (${reason}); retry after the retry-after seconds.`,
      { 'retry-after': String(this.options.retryAfterSeconds) },
    );
  }
}

function tokenHeaders(tpm: number, remaining: number): Record<string, string> {
  return { 'x-ratelimit-limit-tokens': String(tpm), 'x-ratelimit-remaining-tokens': String(remaining) };
}
