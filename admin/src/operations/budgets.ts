/**
 * Monthly token budgets of the admin core: set or remove an organization's budget (tokens per
 * UTC month, alert thresholds, hard stop) and report where each organization stands, for the
 * console's banner, the cross-organization view and the admin listener's metrics.
 */
import { budgetState, DEFAULT_ALERT_PERCENTS, monthDaysSoFar, type Budget, type BudgetState } from '../../../contract/budget.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import { existingOrg } from './orgs.js';

const MAX_BUDGET = 1e15;

export interface BudgetView extends Budget, BudgetState {
  readonly org: string;
  readonly name: string;
}

export interface BudgetInput {
  readonly monthlyTokens?: unknown;
  readonly hardStop?: unknown;
  readonly alertPercents?: unknown;
}

function parseBudget(input: BudgetInput): Budget | null {
  if (input.monthlyTokens === null) return null;
  const tokens = input.monthlyTokens;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0 || tokens > MAX_BUDGET)
    throw invalid('monthlyTokens', 'must be a non-negative integer (or null: no budget)');
  if (input.hardStop !== undefined && typeof input.hardStop !== 'boolean') throw invalid('hardStop', 'must be true or false');
  const alerts = input.alertPercents ?? DEFAULT_ALERT_PERCENTS;
  if (
    !Array.isArray(alerts) ||
    alerts.length > 10 ||
    alerts.some((p) => typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 1000)
  )
    throw invalid('alertPercents', 'must be up to 10 whole percentages from 1 to 1000');
  return {
    monthlyTokens: tokens,
    hardStop: input.hardStop === true,
    alertPercents: [...new Set(alerts as number[])].sort((a, b) => a - b),
  };
}

/** Budget operations bound to `deps`. */
export function budgetOperations(deps: AdminDeps) {
  const viewOf = async (org: string, name: string): Promise<BudgetView | null> => {
    const now = deps.now();
    const [budget, daily] = await Promise.all([deps.budgets.get(org), deps.reports.readDaily(org, monthDaysSoFar(now))]);
    const usedTokens = daily.reduce((sum, { counters }) => sum + counters.tokens, 0);
    return budget && { org, name, ...budget, ...budgetState(budget, usedTokens, now) };
  };

  return {
    /** Sets an organization's monthly budget, or removes it (monthlyTokens: null). */
    async setBudget(orgInput: unknown, input: BudgetInput, who: Who): Promise<{ org: string; budget: BudgetView | null }> {
      const org = await existingOrg(deps, orgInput);
      const budget = parseBudget(input);
      await deps.journal.apply(
        {
          ...who,
          action: 'org.budget',
          target: `org:${org.id}`,
          detail: budget
            ? { monthlyTokens: budget.monthlyTokens, hardStop: budget.hardStop, alertPercents: budget.alertPercents.map(String) }
            : { monthlyTokens: null },
        },
        deps.budgets.setChange(org.id, budget),
      );
      return { org: org.id, budget: await viewOf(org.id, org.name) };
    },

    /** One organization's budget and where it stands this month, or null. */
    async budgetOf(orgInput: unknown): Promise<BudgetView | null> {
      const org = await existingOrg(deps, orgInput);
      return viewOf(org.id, org.name);
    },

    /** Every organization with a budget, most used first. */
    async listBudgets(): Promise<{ budgets: BudgetView[] }> {
      const orgs = await deps.orgs.listOrgs();
      const views = await Promise.all(orgs.map((org) => viewOf(org.id, org.name)));
      return {
        budgets: views.filter((v): v is BudgetView => v !== null).sort((a, b) => b.percent - a.percent || a.org.localeCompare(b.org)),
      };
    },
  };
}
