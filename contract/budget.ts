/**
 * Monthly token budgets: an organization may have a budget of tokens per UTC calendar month,
 * alert thresholds (percentages) and an optional hard stop. admin sets them and reports where
 * each organization stands; authz enforces the hard stop on the Check path. The math is pure:
 * from the budget, the tokens used so far this month and `now`, which thresholds are crossed
 * and, with a hard stop, the refusal until the month ends (a value, not an error). The budget's
 * Redis hash (budgetKey, encodeBudget, decodeBudget) is here too; the month's tokens are the sum
 * of the daily usage counters (contract/redis/settlement-keys.ts's usageDaily) of monthDaysSoFar.
 */

export interface Budget {
  /** Tokens per UTC calendar month. */
  readonly monthlyTokens: number;
  /** Refuse requests (429 rate_limit_exceeded) once the month's tokens reach the budget. */
  readonly hardStop: boolean;
  /** Percentages of the budget that raise an alert, ascending (for example 80, 100). */
  readonly alertPercents: readonly number[];
}

export interface BudgetState {
  readonly usedTokens: number;
  /** Used as a percentage of the budget (may pass 100). */
  readonly percent: number;
  /** The highest alert threshold crossed, or null. */
  readonly alertPercent: number | null;
  readonly exhausted: boolean;
  /** When the month ends and the count starts again (ISO, UTC). */
  readonly resetsAt: string;
}

/** A budget refusal: the 429 problem (a policy denial's shape) with the seconds until the month resets. */
export interface BudgetDeny {
  readonly kind: 'deny';
  readonly code: 'rate_limit_exceeded';
  readonly detail: string;
  readonly retryAfterSeconds: number;
}

export const DEFAULT_ALERT_PERCENTS: readonly number[] = [80, 100];

/** The first instant (ms) of the UTC month after the one holding `now`. */
export function nextMonthStart(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

/** The UTC days (YYYY-MM-DD) of `now`'s month, from the 1st through `now`'s day. */
export function monthDaysSoFar(now: number): string[] {
  const date = new Date(now);
  const days: string[] = [];
  for (let day = 1; day <= date.getUTCDate(); day += 1)
    days.push(new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), day)).toISOString().slice(0, 10));
  return days;
}

/** Where an organization stands against its budget this month. */
export function budgetState(budget: Budget, usedTokens: number, now: number): BudgetState {
  const percent = budget.monthlyTokens === 0 ? (usedTokens > 0 ? Infinity : 100) : (usedTokens / budget.monthlyTokens) * 100;
  const crossed = budget.alertPercents.filter((threshold) => percent >= threshold);
  return {
    usedTokens,
    percent: Number.isFinite(percent) ? Math.round(percent * 10) / 10 : 100,
    alertPercent: crossed.length > 0 ? Math.max(...crossed) : null,
    exhausted: usedTokens >= budget.monthlyTokens,
    resetsAt: new Date(nextMonthStart(now)).toISOString(),
  };
}

/** The refusal for an organization whose hard-stop budget is used up, or null to go on. */
export function budgetDecision(budget: Budget | null, usedTokens: number, now: number): BudgetDeny | null {
  if (!budget?.hardStop || usedTokens < budget.monthlyTokens) return null;
  return budgetRefusal(budget.monthlyTokens, usedTokens, now);
}

/**
 * The hard stop's refusal for a budget of `monthlyTokens` with `usedTokens` used or reserved
 * this month: at Check once it is used up, at admission (settlement.lua) when a request's
 * tokens would pass it.
 */
export function budgetRefusal(monthlyTokens: number, usedTokens: number, now: number): BudgetDeny {
  const reset = nextMonthStart(now);
  return {
    kind: 'deny',
    code: 'rate_limit_exceeded',
    detail: `The organization's monthly token budget (${monthlyTokens} tokens) is used up: ${usedTokens} tokens this month (UTC). It resets at ${new Date(reset).toISOString()}; an administrator can raise it.`,
    retryAfterSeconds: Math.max(1, Math.ceil((reset - now) / 1000)),
  };
}

/**
 * The Redis key of an organization's budget (a hash: `monthly_tokens`, `hard_stop`, `alerts`).
 * It carries the organization's hash tag: authz's Check (settlement.lua) reads it beside the
 * organization's settlement keys, in one slot of a Redis Cluster.
 */
export function budgetKey(prefix: string, org: string): string {
  return `${prefix}budget:{${org}}`;
}

/** A budget to its hash fields. */
export function encodeBudget(budget: Budget): Record<string, string> {
  return {
    monthly_tokens: String(budget.monthlyTokens),
    hard_stop: budget.hardStop ? '1' : '0',
    alerts: budget.alertPercents.join(','),
  };
}

/** Hash fields to a budget, or null when there is none. */
export function decodeBudget(hash: Readonly<Record<string, string>>): Budget | null {
  if (!hash.monthly_tokens) return null;
  const alertPercents = (hash.alerts ?? '')
    .split(',')
    .filter((p) => p !== '')
    .map(Number)
    .filter((p) => Number.isFinite(p));
  return { monthlyTokens: Number(hash.monthly_tokens), hardStop: hash.hard_stop === '1', alertPercents };
}
