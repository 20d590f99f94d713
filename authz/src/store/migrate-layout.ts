/**
 * Moves the settlement's state from the layout before organizations had a hash tag (issue 28)
 * to the tagged one (contract/redis/settlement-keys.ts, contract/access-records.ts,
 * contract/redis/batch-keys.ts), in this order:
 * - budgets <prefix>budget:<org> to <prefix>budget:{org} (until an organization's is moved, its
 *   hard stop is not seen: moments);
 * - organization records and key sets <prefix>org:<org>[:keys] to <prefix>org:{org}[:keys]
 *   (until one is moved, its keys are refused, 401: moments);
 * - month counters ROOT b:<org>:<month> and daily counters ROOT usage:daily:<org>:<day>, added
 *   into ROOT {org}:…;
 * - the Batch API's state, <prefix>b:* and <prefix>bq:*, to its names under the namespace, so
 *   batches running at the upgrade go on: records, lines, segments, lists and queues (a stream
 *   keeps its consumer group) renamed, then the open and active sets spread into each
 *   organization's and the work index;
 * - the one usage stream ROOT usage split into each organization's ROOT {org}:usage.
 * Each move is atomic (migrate-layout.lua, or RENAMENX), so authz replicas migrating at once
 * count nothing twice, and an interrupted migration picks up where it stopped. Grant records and
 * buckets are not moved: they expire within minutes. One Redis (or Sentinel's primary) only: a
 * cluster never held the old layout.
 */
import { readFileSync } from 'node:fs';
import { accessKeys } from '../../../contract/access-records.js';
import { budgetKey } from '../../../contract/budget.js';
import { batchKeys } from '../../../contract/redis/batch-keys.js';
import { settlementKeys } from '../../../contract/redis/settlement-keys.js';
import type { Connection } from './connection.js';

const SCRIPT = readFileSync(new URL('./migrate-layout.lua', import.meta.url), 'utf8');
/** Admin's organization id rule (admin/src/operations/rules.ts): no `{`, `}` or `:`. */
const ORG = '[A-Za-z0-9][A-Za-z0-9._-]{0,63}';
/** Usage entries moved per script call. */
const PAGE = 500;

const glob = (s: string): string => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Moves what the old layout left under the connection's prefix and namespace `ns`; returns the keys moved. */
export async function migrateLayout(connection: Connection, ns: string): Promise<number> {
  if (connection.clustered) return 0;
  const { redis, prefix } = connection;
  const keys = settlementKeys(prefix, ns);
  const run = (old: string, moved: string, ...args: Array<string | number>) =>
    connection.guard(() => redis.eval(SCRIPT, 2, old, moved, ...args) as Promise<number>);
  let count = 0;

  const budget = new RegExp(`^budget:(${ORG})$`);
  for (const old of await connection.scanAll(`${glob(prefix)}budget:*`)) {
    const org = budget.exec(old.slice(prefix.length))?.[1];
    if (!org) continue;
    // A budget set since the upgrade (under the new name) stays; the old one goes.
    if ((await connection.guard(() => redis.renamenx(old, budgetKey(prefix, org)))) === 0) await connection.guard(() => redis.del(old));
    count += 1;
  }
  // Organizations and their key sets (contract/access-records.ts): one atomic move per key; a
  // record written under the new name since the upgrade stays, a key set is merged.
  const access = accessKeys(prefix);
  const org = new RegExp(`^org:(${ORG})(:keys)?$`);
  for (const old of await connection.scanAll(`${glob(prefix)}org:*`)) {
    const m = org.exec(old.slice(prefix.length));
    if (!m) continue;
    await (m[2] ? run(old, access.orgKeys(m[1]!), 'set') : run(old, access.org(m[1]!), 'hash'));
    count += 1;
  }
  const month = new RegExp(`^b:(${ORG}):(\\d{4}-\\d{2})$`);
  for (const old of await connection.scanAll(`${glob(keys.root)}b:*`)) {
    const m = month.exec(old.slice(keys.root.length));
    if (!m) continue;
    await run(old, keys.month(m[1]!, m[2]!), 'month');
    count += 1;
  }
  const daily = new RegExp(`^usage:daily:(${ORG}):(\\d{4}-\\d{2}-\\d{2})$`);
  for (const old of await connection.scanAll(`${glob(keys.root)}usage:daily:*`)) {
    const m = daily.exec(old.slice(keys.root.length));
    if (!m) continue;
    await run(old, keys.usageDaily(m[1]!, m[2]!), 'daily');
    count += 1;
  }
  count += await migrateBatches(connection, ns, (old, moved, ...args) => run(old, moved, ...args));
  const stream = `${keys.root}usage`;
  if ((await connection.guard(() => redis.exists(stream))) === 1) {
    while ((await run(stream, stream, 'usage', PAGE, keys.root)) > 0);
    count += 1;
  }
  return count;
}

/** The Batch API's keys before they moved under the namespace (issue 28), moved one atomic step per key. */
async function migrateBatches(
  connection: Connection,
  ns: string,
  run: (old: string, moved: string, ...args: Array<string | number>) => Promise<number>,
): Promise<number> {
  const { prefix } = connection;
  const keys = batchKeys(prefix, ns);
  let count = 0;
  const state = new RegExp(`^b:\\{(${ORG})\\}:(?:(index)|([A-Za-z0-9_-]{1,100})(:l|:s)?)$`);
  for (const old of await connection.scanAll(`${glob(prefix)}b:*`)) {
    const m = state.exec(old.slice(prefix.length));
    if (!m) continue;
    const [, org, index, batch, part] = m as unknown as [string, string, string | undefined, string | undefined, string | undefined];
    if (index) await run(old, keys.list(org), 'zset');
    else {
      const record = keys.record(org, batch!);
      await run(old, part ? `${record}${part}` : record, 'hash');
    }
    count += 1;
  }
  const queue = new RegExp(`^bq:(${ORG})$`);
  for (const old of await connection.scanAll(`${glob(prefix)}bq:*`)) {
    const org = queue.exec(old.slice(prefix.length))?.[1];
    if (!org || org === 'open' || org === 'active') continue;
    await run(old, keys.stream(org), 'hash');
    count += 1;
  }
  // Last, so that a claim finds an indexed organization's queue already moved.
  // Where the work index's keys start (`active` less its own name).
  const index = keys.active.slice(0, -'active'.length);
  for (const name of ['open', 'active'] as const) {
    const old = `${prefix}bq:${name}`;
    if ((await connection.guard(() => connection.redis.exists(old))) === 0) continue;
    await run(old, name === 'open' ? keys.expiring : keys.active, `batch-${name}`, `${prefix}${ns}:`, index);
    count += 1;
  }
  return count;
}
