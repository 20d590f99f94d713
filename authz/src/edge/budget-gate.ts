/**
 * The hard stop of monthly token budgets on the Check path. Each organization's budget and its
 * month's tokens are read in one pipelined round trip and kept for BUDGET_CACHE_MS, so a busy
 * organization costs one read per interval, not one per Check; the stop may therefore let
 * requests through for up to that long after the budget is reached (and the tokens of requests
 * already admitted are still counted). Bounded: at most MAX_ORGS organizations are remembered.
 * Concurrent Checks of an organization not cached share one read (single flight): a burst of a
 * new organization's requests costs one round trip, not one of ~30 commands per request.
 */
import { budgetDecision, monthDaysSoFar, type BudgetDeny } from '../../../contract/budget.js';
import type { BudgetStore } from '../store/budgets.js';

export const BUDGET_CACHE_MS = 5_000;
const MAX_ORGS = 10_000;

interface Entry {
  readonly deny: BudgetDeny | null;
  readonly until: number;
}

export class BudgetGate {
  private readonly entries = new Map<string, Entry>();
  /** Reads in flight, by organization; at most one each, so bounded by the Checks in flight. */
  private readonly reading = new Map<string, Promise<BudgetDeny | null>>();

  constructor(
    private readonly store: Pick<BudgetStore, 'withUsage'>,
    private readonly cacheMs = BUDGET_CACHE_MS,
  ) {}

  /** The 429 refusal when `org`'s hard-stop budget is used up at `now`, else null; store faults throw. */
  async check(org: string, now: number): Promise<BudgetDeny | null> {
    const cached = this.entries.get(org);
    if (cached && now < cached.until) return cached.deny;
    const pending = this.reading.get(org);
    if (pending) return pending;
    const read = this.read(org, now).finally(() => this.reading.delete(org));
    this.reading.set(org, read);
    return read;
  }

  private async read(org: string, now: number): Promise<BudgetDeny | null> {
    const { budget, usedTokens } = await this.store.withUsage(org, monthDaysSoFar(now));
    const deny = budgetDecision(budget, usedTokens, now);
    this.entries.delete(org);
    this.entries.set(org, { deny, until: now + this.cacheMs });
    if (this.entries.size > MAX_ORGS) this.entries.delete(this.entries.keys().next().value!);
    return deny;
  }
}
