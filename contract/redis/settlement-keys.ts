import { createHash } from 'node:crypto';
import { batchAclRules, batchFunctionNames } from './batch-keys.js';

/**
 * The settlement's Redis layout (contract/redis/settlement.lua; docs/settlement.md). All its
 * state lives under a secret namespace, `<prefix><NS>:`, NS being 128 random bits authz creates
 * once (SETTLEMENT_NS_KEY) and renders into the function library's source. The embedder, whose
 * Redis user may touch only keys under that namespace, never learns NS: it calls the functions
 * by name with one declared key outside the namespace (settlementRouteKey: the organization's
 * hash tag, for Redis Cluster's routing), a grant uid and numbers, and they derive every key.
 * authz and admin (full Redis users) read NS at start to load the library and to read usage back.
 *
 * Function names carry a tag derived from the prefix, so deployments (and test stacks) sharing
 * one Redis under different prefixes each have their own library.
 */

/** The key, under `prefix`, that holds the namespace (readable by full users only). */
export const settlementNsKey = (prefix: string): string => `${prefix}settlement:ns`;

/** A namespace as authz creates it: 32 lower-case hex digits. */
export const NAMESPACE_RULE = /^[0-9a-f]{32}$/;
/** The prefixes a library may be rendered with (they are spliced into Lua source and key patterns). */
const PREFIX_RULE = /^[A-Za-z0-9:_.-]{0,64}$/;

/**
 * The key every settlement function call declares (FCALL's one key): it names no state, only
 * the organization, in the hash tag `{org}` that every key the function touches carries, so a
 * Redis Cluster routes the call to the primary that holds them all. The functions read the
 * organization from it and never touch it; the embedder's user may name it to FCALL only.
 * Organization ids hold none of `{`, `}` or `:` (admin's rules.orgId).
 */
export const settlementRouteKey = (prefix: string, org: string): string => `${prefix}route:{${org}}`;

/**
 * The settlement's key names under `prefix` and namespace `ns` (for full users: authz, admin,
 * tests). Every key of an organization starts `<root>{<org>}:`: one hash slot per organization.
 */
export function settlementKeys(prefix: string, ns: string) {
  const root = `${prefix}${ns}:`;
  const tagged = (org: string) => `${root}{${org}}:`;
  return {
    root,
    /** What SCAN MATCH finds every organization's usage stream with (a Redis glob). */
    usageStreamPattern: `${root.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}{*}:usage`,
    grant: (org: string, uid: string) => `${tagged(org)}g:${uid}`,
    requestBucket: (org: string, model: string) => `${tagged(org)}rl:req:${model}`,
    tokenBucket: (org: string, model: string) => `${tagged(org)}rl:tok:${model}`,
    /** Tokens admitted (reserved) and recorded this UTC month: the hard stop's counter. */
    month: (org: string, month: string) => `${tagged(org)}b:${month}`,
    /** The organization's usage stream (one per organization: a cluster keeps it on the organization's primary). */
    usageStream: (org: string) => `${tagged(org)}usage`,
    usageDaily: (org: string, day: string) => `${tagged(org)}usage:daily:${day}`,
  };
}

/** The UTC day (YYYY-MM-DD) of a time in ms: the daily counters' bucket. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The tag of a prefix's library and function names: not secret, fixed per prefix. */
function tagOf(prefix: string): string {
  return createHash('sha256').update(prefix).digest('hex').slice(0, 12);
}

/** The settlement functions' names for `prefix` (what the embedder calls). */
export function settlementFunctionNames(prefix: string) {
  const tag = tagOf(prefix);
  return {
    library: `ctg_settlement_${tag}`,
    check: `ctg_check_${tag}`,
    admit: `ctg_admit_${tag}`,
    record: `ctg_record_${tag}`,
    refund: `ctg_refund_${tag}`,
    void: `ctg_void_${tag}`,
    status: `ctg_status_${tag}`,
  };
}

/**
 * A library's source (settlement.lua, batch.lua) with the prefix, the namespace and the tag put
 * in place of their placeholders: what authz loads with FUNCTION LOAD REPLACE. It holds NS, so
 * only full users may read it back (FUNCTION LIST is not the embedder's).
 */
export function renderLibrary(source: string, prefix: string, ns: string): string {
  if (!PREFIX_RULE.test(prefix)) throw new Error('REDIS_KEY_PREFIX may hold only letters, digits and : _ . - (at most 64)');
  if (!NAMESPACE_RULE.test(ns)) throw new Error('the settlement namespace is not 32 hex digits');
  return source.replaceAll('__CTG_ROOT__', `${prefix}${ns}:`).replaceAll('__CTG_PREFIX__', prefix).replaceAll('__CTG_TAG__', tagOf(prefix));
}

/**
 * `ACL SETUSER <user> …` rules for the embedder's Redis user: FCALL of exactly its functions
 * (by name: the check function is authz's), WAIT, and exactly the commands those functions run,
 * on keys under the secret namespace only (Redis checks a function's commands against the
 * caller's permissions). It cannot read anything, list functions, or run a script of its own.
 * These rules hold NS: authz sets them (store/settlement-user.ts); nobody prints them.
 */
export function settlementAclRules(prefix: string, ns: string, password: string): string[] {
  const names = settlementFunctionNames(prefix);
  const glob = prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
  const batch = batchFunctionNames(prefix);
  return [
    'reset',
    'on',
    `>${password}`,
    'resetchannels',
    '-@all',
    '+ping',
    '+wait',
    // A Redis Cluster client learns which primary holds which slots, and that the cluster is up
    // (no keys, no data).
    '+cluster|slots',
    '+cluster|info',
    ...[names.admit, names.record, names.refund, names.void, ...batch.write].map((fn) => `+fcall|${fn}`),
    ...[names.status, ...batch.read].map((fn) => `+fcall_ro|${fn}`),
    // The routing keys the functions declare (settlementRouteKey, and the batch index's
    // batchIndexRouteKey): FCALL of them only, on them (a selector, so no other command may name
    // one); the functions never touch them.
    `(${[names.admit, names.record, names.refund, names.void, ...batch.write].map((fn) => `+fcall|${fn}`).join(' ')} ${[names.status, ...batch.read].map((fn) => `+fcall_ro|${fn}`).join(' ')} ~${glob}route:*)`,
    // Inside the functions: Redis's clock, and (a selector, so no other key pattern gets them)
    // their commands on the namespace's keys.
    '+time',
    `(+get +set +incrby +pexpire +hget +hmget +hgetall +hset +hincrby +xadd +xdel ~${glob}${ns}:*)`,
    // The Batch API's functions (batch.lua) run as the same user: more commands on the
    // namespace's keys, and HGET of the organization and budget records their admission reads.
    ...batchAclRules(glob, `${glob}${ns}:*`),
  ];
}
