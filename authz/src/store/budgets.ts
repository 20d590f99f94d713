/**
 * Organization budgets in Redis: `<prefix>budget:<org>` holds the monthly token budget, the hard
 * stop and the alert thresholds (written by the admin core); the month's usage is read from the
 * per-organization daily counters that usage recording keeps (`usage:daily:<org>:<day>`), in one
 * pipelined round trip.
 */
import type { Budget } from '../policy/budget.js';
import type { Connection } from './connection.js';

export class BudgetStore {
  constructor(private readonly connection: Connection) {}

  private key(org: string): string {
    return `${this.connection.keys.prefix}budget:${org}`;
  }

  /** The organization's budget, or null when it has none. */
  async get(org: string): Promise<Budget | null> {
    const { redis } = this.connection;
    return decode(await this.connection.guard(() => redis.hgetall(this.key(org))));
  }

  /** Sets (or, with null, removes) the organization's budget. */
  async set(org: string, budget: Budget | null): Promise<void> {
    const { redis } = this.connection;
    if (budget === null) {
      await this.connection.guard(() => redis.del(this.key(org)));
      return;
    }
    const fields = {
      monthly_tokens: String(budget.monthlyTokens),
      hard_stop: budget.hardStop ? '1' : '0',
      alerts: budget.alertPercents.join(','),
    };
    await this.connection.guard(() => redis.multi().del(this.key(org)).hset(this.key(org), fields).exec());
  }

  /** The budget and the tokens used on `days`, in one round trip. */
  async withUsage(org: string, days: readonly string[]): Promise<{ budget: Budget | null; usedTokens: number }> {
    const { redis, keys } = this.connection;
    const pipeline = redis.pipeline().hgetall(this.key(org));
    for (const day of days) pipeline.hget(keys.usageDaily(org, day), 'tokens');
    const replies = await this.connection.guard(async () => {
      const answered = (await pipeline.exec()) ?? [];
      const failed = answered.find(([error]) => error);
      if (failed) throw failed[0];
      return answered;
    });
    const budget = decode((replies[0]?.[1] ?? {}) as Record<string, string>);
    const usedTokens = replies.slice(1).reduce((sum, [, value]) => sum + Number(value ?? 0), 0);
    return { budget, usedTokens };
  }
}

function decode(hash: Record<string, string>): Budget | null {
  if (!hash.monthly_tokens) return null;
  const alertPercents = (hash.alerts ?? '')
    .split(',')
    .filter((p) => p !== '')
    .map(Number)
    .filter((p) => Number.isFinite(p));
  return { monthlyTokens: Number(hash.monthly_tokens), hardStop: hash.hard_stop === '1', alertPercents };
}
