/**
 * The admin listener's GET /metrics (outside /api; like every metrics endpoint of the gateway it
 * answers only `Authorization: Bearer <METRICS_TOKEN>`, and nobody when no token is set): how
 * many organizations have a monthly token
 * budget, how many crossed an alert threshold, how many used it up. Counts only: organization
 * ids never become labels (the console's banner names them), so the series stay bounded.
 * Computed at scrape time from Redis, on a registry of its own.
 */
import type { FastifyInstance } from 'fastify';
import { Gauge, Registry } from 'prom-client';
import { bearerCheck } from '../../../contract/bearer.js';
import type { SecretValues } from '../../../contract/secrets.js';
import type { Operations } from '../operations/operations.js';

/** Registers GET /metrics on `app`. */
export function registerAdminMetrics(app: FastifyInstance, ops: Pick<Operations, 'listBudgets'>, token: SecretValues | undefined): void {
  const allowed = bearerCheck(token);
  const registry = new Registry();
  const organizations = new Gauge({
    name: 'ctg_budget_organizations',
    help: 'Organizations by monthly token budget state: budgeted (has a budget), alerting (crossed an alert threshold), exhausted (used it all), this UTC month.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const { budgets } = await ops.listBudgets();
      this.set({ state: 'budgeted' }, budgets.length);
      this.set({ state: 'alerting' }, budgets.filter((b) => b.alertPercent !== null).length);
      this.set({ state: 'exhausted' }, budgets.filter((b) => b.exhausted).length);
    },
  });
  void organizations;
  app.get('/metrics', async (request, reply) => {
    if (!allowed(request.headers.authorization)) {
      return reply.code(401).header('www-authenticate', 'Bearer').type('text/plain; charset=utf-8').send('unauthorized\n');
    }
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}
