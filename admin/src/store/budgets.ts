/**
 * Organization budgets in Redis: the hash contract/budget.ts describes, one per organization,
 * written whole. authz reads it for the hard stop; the month's usage comes from the daily
 * counters (reports.ts).
 */
import { budgetKey, decodeBudget, encodeBudget, type Budget } from '../../../contract/budget.js';
import type { RedisConnection } from '../../../contract/redis-connection.js';

export class BudgetStore {
  constructor(private readonly connection: RedisConnection) {}

  /** The organization's budget, or null when it has none. */
  async get(org: string): Promise<Budget | null> {
    const { redis, prefix } = this.connection;
    return decodeBudget(await this.connection.guard(() => redis.hgetall(budgetKey(prefix, org))));
  }

  /** Sets (or, with null, removes) the organization's budget. */
  async set(org: string, budget: Budget | null): Promise<void> {
    const { redis, prefix } = this.connection;
    // The audit record that follows would fail on a cluster, leaving the change unaudited.
    this.connection.refuseOnCluster('setting a budget');
    const key = budgetKey(prefix, org);
    if (budget === null) {
      await this.connection.guard(() => redis.del(key));
      return;
    }
    await this.connection.guard(() => redis.multi().del(key).hset(key, encodeBudget(budget)).exec());
  }
}
