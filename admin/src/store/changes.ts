/**
 * Applying a journalled change (audit/journal.ts) to the records, slot by slot. A change is
 * data: guards (the entities it changes, each with the version its author read) and set-style
 * operations (write these fields, delete this key, add or remove this member), so applying it
 * twice is applying it once. The operations are grouped by Redis Cluster hash slot and each
 * group is one script call (apply-change.lua, atomic), so the same code runs on one Redis, Sentinel and a cluster (where a
 * command's keys must share a slot). A guarded hash carries `audit_seq`, the audit record of
 * the change that last wrote it: the per-entity version a later change is checked against.
 */
import { keySlot } from '../../../contract/redis-target.js';
import type { RedisConnection } from '../../../contract/redis-connection.js';
import type { Connection } from './connection.js';

/** One set-style write on one key. */
export type ChangeOp =
  /** HSET the fields; with `replace`, the hash is deleted first (written whole). */
  | { readonly op: 'hset'; readonly key: string; readonly fields: Readonly<Record<string, string>>; readonly replace?: boolean }
  | { readonly op: 'del'; readonly key: string }
  | { readonly op: 'sadd' | 'srem'; readonly key: string; readonly member: string }
  | { readonly op: 'set'; readonly key: string; readonly value: string };

/**
 * An entity (a hash) the change writes, and what its author saw: the version (`audit_seq`, 0 for
 * a record written before versions), `absent` (creating it), or `any` (written whole, whatever
 * was there). `gone`: the change deletes it.
 */
interface ChangeGuard {
  readonly key: string;
  readonly expect: number | 'absent' | 'any';
  readonly gone?: boolean;
}

export interface Change {
  readonly guards: readonly ChangeGuard[];
  readonly ops: readonly ChangeOp[];
}

/** Several changes as one (their guards and operations, in order). */
export function combine(...changes: readonly Change[]): Change {
  return { guards: changes.flatMap((c) => c.guards), ops: changes.flatMap((c) => c.ops) };
}

/** Where a change stands against the records: to apply, already applied, or overtaken (conflict names the entity). */
export type ChangeCheck = { readonly state: 'apply' | 'done' } | { readonly state: 'conflict'; readonly key: string };

/** The hash field holding an entity's version: the audit seq of the change that last wrote it. */
const VERSION_FIELD = 'audit_seq';

/** An entity's version as read with its hash (0 when it has none). */
export const versionOf = (hash: Readonly<Record<string, string>>): number => Number(hash[VERSION_FIELD] ?? 0) || 0;

export class ChangeStore {
  constructor(private readonly connection: Connection) {}

  /** Compares each guarded entity with what the change's author saw (see ChangeCheck). */
  async check(change: Change, seq: number): Promise<ChangeCheck> {
    const { redis } = this.connection;
    let done = change.guards.length > 0;
    for (const guard of change.guards) {
      const [exists, version] = await Promise.all([
        this.connection.guard(() => redis.exists(guard.key)),
        this.connection.guard(() => redis.hget(guard.key, VERSION_FIELD)),
      ]);
      const current = Number(version ?? 0) || 0;
      // At or past this change: applied (a newer change to an entity is journalled only once
      // this one is closed). Gone: deleted by it.
      if ((exists === 1 && current >= seq && seq > 0) || (guard.gone && exists === 0)) continue;
      done = false;
      const fits = guard.expect === 'any' || (guard.expect === 'absent' ? exists === 0 : exists === 1 && current === guard.expect);
      if (!fits) return { state: 'conflict', key: guard.key };
    }
    return { state: done ? 'done' : 'apply' };
  }

  /**
   * Applies the operations, one script per hash slot (the guarded entities' slots first), and
   * stamps each guarded entity that stays with `seq`. Idempotent: after a crash part-way, the
   * whole change is applied again. A slot's share is atomic; the change as a whole is not.
   */
  async apply(change: Change, seq: number): Promise<void> {
    const stamps: ChangeOp[] = change.guards
      .filter((guard) => !guard.gone)
      .map((guard) => ({ op: 'hset', key: guard.key, fields: { [VERSION_FIELD]: String(seq) } }));
    await this.applyOps(
      [...change.ops, ...stamps],
      change.guards.map((guard) => guard.key),
      seq,
    );
  }

  /**
   * Runs set-style operations grouped by slot (the slots of `guarded` keys before the others),
   * one script per slot (apply-change.lua), which skips its slot when a guarded key there
   * carries a change newer than `seq`.
   */
  async applyOps(ops: readonly ChangeOp[], guarded: readonly string[] = [], seq = 0): Promise<void> {
    const { redis } = this.connection;
    const groups = new Map<number, { keys: string[]; guards: number[]; ops: object[] }>();
    const groupOf = (key: string) => {
      const slot = keySlot(key);
      const group = groups.get(slot) ?? { keys: [], guards: [], ops: [] };
      groups.set(slot, group);
      if (!group.keys.includes(key)) group.keys.push(key);
      return { group, k: group.keys.indexOf(key) + 1 };
    };
    for (const key of guarded) {
      const { group, k } = groupOf(key);
      if (!group.guards.includes(k)) group.guards.push(k);
    }
    for (const { key, ...rest } of ops) {
      const { group, k } = groupOf(key);
      group.ops.push({ ...rest, k });
    }
    for (const group of groups.values()) {
      if (group.ops.length === 0) continue;
      const spec = JSON.stringify({ guards: group.guards, ops: group.ops });
      await this.connection.guard(() => redis.applyChange(group.keys.length, ...group.keys, String(seq), spec));
    }
  }
}

/**
 * Writes set-style operations directly, unaudited and unguarded, one MULTI per hash slot: for
 * test fixtures on any connection (authz's too), never for admin's operations.
 */
export async function writeDirect(connection: RedisConnection, ops: readonly ChangeOp[]): Promise<void> {
  const { redis } = connection;
  const groups = new Map<number, ChangeOp[]>();
  for (const op of ops) groups.set(keySlot(op.key), [...(groups.get(keySlot(op.key)) ?? []), op]);
  for (const group of groups.values()) {
    const multi = redis.multi();
    for (const op of group) {
      if (op.op === 'hset') {
        if (op.replace) multi.del(op.key);
        multi.hset(op.key, op.fields);
      } else if (op.op === 'del') multi.del(op.key);
      else if (op.op === 'set') multi.set(op.key, op.value);
      else if (op.op === 'sadd') multi.sadd(op.key, op.member);
      else multi.srem(op.key, op.member);
    }
    await connection.guard(() => multi.exec());
  }
}
