import { createHash } from 'node:crypto';
import { accessKeys } from '../access-records.js';
import { budgetKey } from '../budget.js';
import { settlementRouteKey } from './settlement-keys.js';

/**
 * The Batch API's Redis layout (contract/redis/batch.lua; docs/batch.md, "Shared state"). Like the
 * settlement's, all of it lives under the secret namespace ROOT = `<prefix><NS>:` that the
 * embedder never learns: the embedder calls the functions by name with one declared key, a
 * routing key, and arguments (organization, batch id, segment, entry id), and the functions
 * derive every key from them. Two kinds of call:
 * - per organization, routed by the settlement's `<prefix>route:{<org>}`: every key they touch
 *   carries the `{<org>}` hash tag (the batch state, the settlement's grant record, usage and
 *   month counter, and two records admin owns and the admission reads: the organization's
 *   `models` and its budget), so on a Redis Cluster each runs on the organization's primary;
 * - on the global work index (which organizations have work, least-served first, and which have
 *   batches not yet ended, soonest expiry first), routed by batchIndexRouteKey: its keys carry
 *   the fixed tag `{:batch}`, which no organization can have (ids hold no `:`).
 * No call spans both, so the protocol between them (docs/batch.md) is correct without
 * cross-slot atomicity.
 */

/** The hash tag of the global work index: not an organization id (those hold no `:`). */
const INDEX_TAG = ':batch';

/** The key the index functions declare (never written): a Redis Cluster routes them by it. */
export const batchIndexRouteKey = (prefix: string): string => `${prefix}route:{${INDEX_TAG}}`;

/** The key a per-organization batch call declares: the settlement's routing key. */
export const batchRouteKey = (prefix: string, org: string): string => settlementRouteKey(prefix, org);

/**
 * The batch functions' key names under `prefix` and namespace `ns` (for full users: authz,
 * tests; batch.lua derives the same names). T = ROOT{<org>}:, I = ROOT{:batch}:.
 */
export function batchKeys(prefix: string, ns: string) {
  const root = `${prefix}${ns}:`;
  const tagged = (org: string) => `${root}{${org}}:`;
  const record = (org: string, batch: string) => `${tagged(org)}batch:${batch}`;
  const index = `${root}{${INDEX_TAG}}:`;
  return {
    /** T batch:<id>: hash of status, times, counts, ids, key, model. */
    record,
    /** T batch:<id>:l: line -> a:<tokens> admitted, u:<tokens> recorded, f:<code> failed, r:<tokens> refunded. */
    lines: (org: string, batch: string) => `${record(org, batch)}:l`,
    /** T batch:<id>:s: segment -> done | skip. */
    segments: (org: string, batch: string) => `${record(org, batch)}:s`,
    /** T batches: zset of the organization's batches by creation (ms). */
    list: (org: string) => `${tagged(org)}batches`,
    /** T bq: stream of {b, s} segment references; consumer group 'w'. */
    stream: (org: string) => `${tagged(org)}bq`,
    /** T bopen: zset of the organization's batches not yet ended, by expiry (ms). */
    open: (org: string) => `${tagged(org)}bopen`,
    /** T bsealed: the highest index version a sweep found the organization idle at (docs/batch.md). */
    sealed: (org: string) => `${tagged(org)}bsealed`,
    /** I active: zset of organizations with queued work, by segments served. */
    active: `${index}active`,
    /** I open: zset of organizations with batches not yet ended, by their soonest expiry (ms). */
    expiring: `${index}open`,
    /** I ver: hash of organization -> index version (bumped by every enlist). */
    versions: `${index}ver`,
    /** I seq: the counter index versions are drawn from. */
    seq: `${index}seq`,
    /** admin's records, read by the admission check (HGET only). */
    org: (org: string) => accessKeys(prefix).org(org),
    budget: (org: string) => budgetKey(prefix, org),
  };
}

const WRITE = [
  'open',
  'take',
  'heartbeat',
  'admit',
  'commit',
  'cancel',
  'expire',
  'finish',
  'fail',
  'unfinished',
  'enlist',
  'served',
  'retire',
  'reschedule',
] as const;
const READ = ['get', 'list', 'candidates', 'expiring'] as const;

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
 * What batch.lua's functions need besides the settlement's rules (settlementAclRules puts the
 * functions in its routing-key selector): the commands they run on namespace keys (`nsGlob`,
 * escaped `<prefix><NS>:*`), and HGET on admin's organization and budget records (`glob`, the
 * escaped prefix), which the admission reads. No key outside the namespace is writable.
 */
export function batchAclRules(glob: string, nsGlob: string): string[] {
  return [
    `(+hsetnx +hdel +zadd +zrange +zrem +zscore +zincrby +incr +exists +xgroup|create +xreadgroup +xautoclaim +xclaim +xack +xpending +xtrim ~${nsGlob})`,
    `(+hget %R~${glob}org:{*} %R~${glob}budget:{*})`,
  ];
}
