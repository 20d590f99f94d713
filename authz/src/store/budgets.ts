/**
 * Organization budgets in Redis, read for the Check path's hard stop: the budget hash
 * (contract/budget.ts; admin writes it) and the month's usage from the per-organization daily
 * counters that usage recording keeps (`usage:daily:<org>:<day>`), in one pipelined round trip.
 */
import { budgetKey, decodeBudget, type Budget } from '../../../contract/budget.js';
import type { Connection } from './connection.js';

export class BudgetStore {
  constructor(private readonly connection: Connection) {}

  /** The budget and the tokens used on `days`, in one round trip. */
  async withUsage(org: string, days: readonly string[]): Promise<{ budget: Budget | null; usedTokens: number }> {
    const { redis, keys } = this.connection;
    const pipeline = redis.pipeline().hgetall(budgetKey(keys.prefix, org));
    for (const day of days) pipeline.hget(keys.usageDaily(org, day), 'tokens');
    const replies = await this.connection.guard(async () => {
      const answered = (await pipeline.exec()) ?? [];
      const failed = answered.find(([error]) => error);
      if (failed) throw failed[0];
      return answered;
    });
    const budget = decodeBudget((replies[0]?.[1] ?? {}) as Record<string, string>);
    const usedTokens = replies.slice(1).reduce((sum, [, value]) => sum + Number(value ?? 0), 0);
    return { budget, usedTokens };
  }
}
