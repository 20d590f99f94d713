/**
 * Organization budgets in Redis: the hash contract/budget.ts describes, one per organization,
 * written whole. authz reads it for the hard stop; the month's usage comes from the daily
 * counters (reports.ts). admin's operations set it through a journalled change built here.
 */
import { budgetKey, decodeBudget, encodeBudget, type Budget } from '../../../contract/budget.js';
import type { RedisConnection } from '../../../contract/redis-connection.js';
import { writeDirect, type Change } from './changes.js';

export class BudgetStore {
  constructor(private readonly connection: RedisConnection) {}

  /** The organization's budget, or null when it has none. */
  async get(org: string): Promise<Budget | null> {
    const { redis, prefix } = this.connection;
    return decodeBudget(await this.connection.guard(() => redis.hgetall(budgetKey(prefix, org))));
  }

  /** The change that sets (or, with null, removes) the organization's budget, whatever it was. */
  setChange(org: string, budget: Budget | null): Change {
    const key = budgetKey(this.connection.prefix, org);
    return budget === null
      ? { guards: [{ key, expect: 'any', gone: true }], ops: [{ op: 'del', key }] }
      : { guards: [{ key, expect: 'any' }], ops: [{ op: 'hset', key, fields: encodeBudget(budget), replace: true }] };
  }

  /** Sets (or removes) the budget directly, unaudited (test fixtures; admin's operations record a change). */
  async set(org: string, budget: Budget | null): Promise<void> {
    await writeDirect(this.connection, this.setChange(org, budget).ops);
  }
}
