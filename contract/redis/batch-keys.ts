import { createHash } from 'node:crypto';
import { budgetKey } from '../budget.js';

/**
 * The Redis keys of the Batch API's functions (contract/redis/batch.lua), shared by the embedder
 * (which calls them) and the tests, and the ACL rules that let the embedder's restricted user
 * run them. Every batch key of an organization carries the `{org}` hash tag; organization ids
 * hold none of `{`, `}` or `:`. The functions read two records authz owns, read-only: the
 * organization (its `models`) and its budget (`monthly_tokens`, `hard_stop`); their names are
 * authz's layout, checked against it by test/batch/batch-api.test.ts. The grant record, the
 * usage stream, its counters and the month's budget counter are the settlement's, under its
 * secret namespace (settlement-keys.ts): the functions derive them, the embedder names none.
 */
/** The batch functions' key names under `prefix`. */
export function batchKeys(prefix: string) {
  const record = (org: string, batch: string) => `${prefix}b:{${org}}:${batch}`;
  return {
    recordPrefix: `${prefix}b:`,
    record,
    lines: (org: string, batch: string) => `${record(org, batch)}:l`,
    segments: (org: string, batch: string) => `${record(org, batch)}:s`,
    index: (org: string) => `${prefix}b:{${org}}:index`,
    queuePrefix: `${prefix}bq:`,
    stream: (org: string) => `${prefix}bq:${org}`,
    active: `${prefix}bq:active`,
    open: `${prefix}bq:open`,
    /** authz's records, read by the admission check. */
    org: (org: string) => `${prefix}org:${org}`,
    budget: (org: string) => budgetKey(prefix, org),
  };
}

const WRITE = ['open', 'claim', 'heartbeat', 'admit', 'commit', 'cancel', 'expire', 'finish', 'fail'] as const;
const READ = ['get', 'list', 'unfinished'] as const;

/** The batch functions' names for `prefix` (tagged like the settlement's: settlement-keys.ts). */
export function batchFunctionNames(prefix: string) {
  const tag = createHash('sha256').update(prefix).digest('hex').slice(0, 12);
  const name = (fn: string) => `ctg_batch_${fn}_${tag}`;
  return {
    library: `ctg_batch_${tag}`,
    fn: Object.fromEntries([...WRITE, ...READ].map((fn) => [fn, name(fn)])) as Record<
      (typeof WRITE)[number] | (typeof READ)[number],
      string
    >,
    write: WRITE.map(name),
    read: READ.map(name),
  };
}

/**
 * The rules the embedder's user needs besides the settlement's (appended to them): the batch
 * keys with exactly the commands batch.lua runs on them, and read-only access to the
 * organization and budget records the admission check reads. `glob` is the escaped prefix.
 */
export function batchAclRules(glob: string): string[] {
  const batch = `~${glob}b:*`;
  const queue = `~${glob}bq:*`;
  const readOnly = [`%R~${glob}org:*`, `%R~${glob}budget:*`];
  // The organization and budget keys are declared to FCALL (which needs them at the top level);
  // the only command any selector allows on them is HGET, so they stay read-only.
  return [
    batch,
    queue,
    `~${glob}org:*`,
    `~${glob}budget:*`,
    `(+hget +hset +hsetnx +hincrby +hgetall +pexpire +zadd +zrange +zrem ${batch})`,
    `(+xadd +xgroup|create +xreadgroup +xautoclaim +xclaim +xack +xpending +xtrim +zadd +zrange +zrem +zincrby ${queue})`,
    `(+hget ${readOnly.join(' ')})`,
  ];
}
