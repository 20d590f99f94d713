import { batchAclRules } from './batch-keys.js';

/**
 * The Redis keys a request's settlement touches, shared by authz (which writes organizations and
 * keys, reads usage, and checks request rates on the same token buckets) and the embedder (which
 * settles through contract/redis/settlement.lua). Every key starts with REDIS_KEY_PREFIX;
 * organization ids never contain ':' so keys cannot collide.
 */

/** The settlement's key names under `prefix`. */
export function settlementKeys(prefix: string) {
  return {
    tokenBucket: (org: string, model: string) => `${prefix}rl:tok:${org}:${model}`,
    /** One request's settlement state (admitted, recorded or refunded), by the grant's uid. */
    settle: (uid: string) => `${prefix}settle:${uid}`,
    usageStream: `${prefix}usage`,
    usageDaily: (org: string, day: string) => `${prefix}usage:daily:${org}:${day}`,
  };
}

/** The UTC day (YYYY-MM-DD) of a time in ms: the daily counters' bucket. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * `ACL SETUSER <user> …` rules for the embedder's Redis user: FCALL of the settlement functions
 * and, through Redis 7 selectors, exactly the commands those functions run on exactly their keys
 * (Redis checks a function's commands against the caller's permissions). It cannot read or
 * delete anything, cannot run a script of its own, and can only append to the usage stream.
 */
export function settlementAclRules(prefix: string, password: string): string[] {
  const glob = prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
  const k = settlementKeys(glob);
  const bucket = `~${k.tokenBucket('*', '*').replace(/:\*:\*$/, ':*')}`;
  const settle = `~${k.settle('*')}`;
  const stream = `~${k.usageStream}`;
  const daily = `~${k.usageDaily('*', '*').replace(/:\*:\*$/, ':*')}`;
  return [
    'reset',
    'on',
    `>${password}`,
    'resetchannels',
    '-@all',
    '+fcall',
    '+fcall_ro',
    '+ping',
    '+time',
    '+info',
    '+function|list',
    bucket,
    settle,
    stream,
    daily,
    `(+get +set ${bucket} ${settle})`,
    `(+xadd ${stream})`,
    `(+hincrby ${daily})`,
    // The Batch API's functions (batch.lua) run as the same user.
    ...batchAclRules(glob),
  ];
}
