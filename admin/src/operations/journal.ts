/**
 * Every change to the records is journalled: its audit record is appended first (with the
 * change, as data, in the journal beside the trail: one slot, one atomic append), then the
 * change is applied slot by slot (store/changes.ts, idempotent, checked against the versions its
 * author read), then its journal entry is closed. A change that cannot be applied as read (an
 * entity changed in between) is closed by a follow-up record `<action>.failed`; one interrupted
 * (a crash, Redis gone mid-way) stays open and is completed, or closed as failed, by the next
 * admin process to start or to make a change (`recover`). So no change is applied without its
 * record, and every record of a change that was not applied is followed by one that says so.
 */
import type { AuditEvent, AuditRecord } from '../audit/chain.js';
import type { AuditLog } from '../audit/log.js';
import type { Change, ChangeStore } from '../store/changes.js';
import { StoreUnavailableError } from '../../../contract/redis-connection.js';
import { AdminError } from './errors.js';

/** A journal entry as stored: who and what (for the follow-up record), the entities it holds, the change. */
interface JournalEntry {
  readonly actor: string;
  readonly from: string;
  readonly action: string;
  readonly target: string;
  readonly entities: readonly string[];
  readonly change: Change;
}

/** What recover did with the changes it found open: applied, closed as failed, left open. */
export interface Recovered {
  readonly completed: number;
  readonly failed: number;
  readonly stuck: number;
}

export class ChangeJournal {
  constructor(
    private readonly audit: AuditLog,
    private readonly changes: ChangeStore,
  ) {}

  /**
   * Records `event`, then applies `change`; returns the record. Refused (conflict, nothing
   * recorded) when an entity is no longer as read, or while another change to one of its
   * entities is still being applied; refused (conflict, followed by a `.failed` record) when an
   * entity changed between that check and the apply.
   */
  async apply(event: AuditEvent, change: Change): Promise<AuditRecord> {
    const entry: JournalEntry = {
      actor: event.actor,
      from: event.from,
      action: event.action,
      target: event.target,
      entities: [...new Set(change.guards.map((guard) => guard.key))],
      change,
    };
    for (let attempt = 0; attempt < 2; attempt += 1) {
      // An open change (almost always none) is completed first: it may be a crash's, and one of
      // its entities may be this change's.
      if ((await this.audit.openChanges()) > 0) await this.recover();
      if ((await this.changes.check(change, 0)).state === 'conflict')
        throw new AdminError('conflict', `${event.target} was changed since it was read; try again`);
      const record = await this.audit.journal(event, JSON.stringify(entry));
      if (record === 'busy') continue;
      let applied: boolean;
      try {
        applied = await this.settle(record.seq, entry);
      } catch (error) {
        // Recorded, not (wholly) applied: the next recovery completes it; the reply says so.
        throw new StoreUnavailableError(
          `the change is recorded (audit record ${record.seq}) and will be applied when Redis answers again (${error instanceof Error ? error.message : String(error)})`,
        );
      }
      if (!applied) throw new AdminError('conflict', `${event.target} changed while this change was made; try again`);
      return record;
    }
    throw new AdminError('conflict', `another change to ${event.target} is being applied; try again`);
  }

  /**
   * Completes every open change, oldest first: applies it (again: applying is idempotent) and
   * closes it, or closes it with a `.failed` record when its entities moved on. A change another
   * process is applying at the same moment is applied twice, harmlessly, and closed once. One
   * that cannot be applied now (Redis gone, a write Redis refuses) stays open and is counted
   * `stuck`: only changes to its entities wait for it (they are refused as busy).
   */
  async recover(): Promise<Recovered> {
    const counts = { completed: 0, failed: 0, stuck: 0 };
    for (const [seq, raw] of await this.audit.openEntries()) {
      const entry = parseEntry(raw);
      try {
        if (!entry)
          await this.fail(
            seq,
            { actor: 'system', from: 'journal', action: 'change', target: 'unknown' },
            'its journal entry is unreadable',
          );
        counts[entry && (await this.settle(seq, entry)) ? 'completed' : 'failed'] += 1;
      } catch {
        counts.stuck += 1;
      }
    }
    return counts;
  }

  /** Applies and closes the change `seq`; false when it was closed as failed instead. */
  private async settle(seq: number, entry: JournalEntry): Promise<boolean> {
    const check = await this.changes.check(entry.change, seq);
    if (check.state === 'conflict') {
      await this.fail(seq, entry, 'a record it changes was changed by another change after it was read');
      return false;
    }
    await this.changes.apply(entry.change, seq);
    await this.audit.closeChange(seq);
    return true;
  }

  private async fail(seq: number, entry: Pick<JournalEntry, 'actor' | 'from' | 'action' | 'target'>, reason: string): Promise<void> {
    await this.audit.recordFailure(
      { actor: entry.actor, from: entry.from, action: `${entry.action}.failed`, target: entry.target, detail: { change: seq, reason } },
      seq,
    );
  }
}

function parseEntry(raw: string): JournalEntry | null {
  try {
    const entry = JSON.parse(raw) as JournalEntry;
    return Array.isArray(entry.change?.guards) && Array.isArray(entry.change?.ops) ? entry : null;
  } catch {
    return null;
  }
}
