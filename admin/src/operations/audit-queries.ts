/**
 * Reading the audit trail as an auditor does: filters (who, what, which object, when), pages
 * newest first with a cursor (`before`: a seq), and export of every matching record as JSON
 * lines or CSV (itself audited). Each page reads at most MAX_SCAN records, so a filter that
 * matches little answers with a cursor to continue instead of reading the whole trail at once.
 */
import type { AuditRecord } from '../audit/chain.js';
import { exportLines, type ExportFilter } from '../audit/export-file.js';
import type { AdminDeps, Who } from './deps.js';
import { invalid } from './errors.js';
import * as rules from './rules.js';

/** The most audit records one read returns (a page here, and the recent list in operations.ts). */
export const MAX_AUDIT_PAGE = 500;
const MAX_SCAN = 50_000;
const CSV_COLUMNS = ['seq', 'at', 'actor', 'action', 'target', 'from', 'detail', 'prev_hash', 'hash', 'sig'] as const;
const FILTERS = ['actor', 'action', 'target', 'since', 'until'] as const;

export interface AuditFilter {
  readonly actor?: unknown;
  readonly action?: unknown;
  readonly target?: unknown;
  readonly since?: unknown;
  readonly until?: unknown;
}

type Match = (record: AuditRecord) => boolean;

function text(value: unknown, field: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 200 || /\p{Cc}/u.test(value)) throw invalid(field, 'must be at most 200 characters');
  return value.toLowerCase();
}

/** A predicate for the filter: actor/target contain, action starts with, time within [since, until]. */
function auditMatcher(filter: AuditFilter): Match {
  const actor = text(filter.actor, 'actor');
  const action = text(filter.action, 'action');
  const target = text(filter.target, 'target');
  const { since, until } = rules.range(filter.since, filter.until);
  return (r) =>
    (actor === undefined || r.actor.toLowerCase().includes(actor)) &&
    (action === undefined || r.action.toLowerCase().startsWith(action)) &&
    (target === undefined || r.target.toLowerCase().includes(target)) &&
    (since === undefined || Date.parse(r.at) >= since) &&
    (until === undefined || Date.parse(r.at) <= until);
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** Audit reading bound to `deps`. */
export function auditQueries(deps: AdminDeps) {
  return {
    /** One page of matching records, newest first, older than seq `before` when given. */
    async auditPage(query: AuditFilter & { limit?: unknown; before?: unknown }) {
      const limit = query.limit ?? 50;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE)
        throw invalid('limit', `must be an integer from 1 to ${MAX_AUDIT_PAGE}`);
      const before = query.before;
      if (before !== undefined && (typeof before !== 'number' || !Number.isInteger(before) || before < 1))
        throw invalid('before', 'must be a record number');
      const matches = auditMatcher(query);
      const records: AuditRecord[] = [];
      let scanned = 0;
      let last: number | null = null;
      for await (const record of deps.audit.newestFirst()) {
        if (before !== undefined && record.seq >= before) continue;
        scanned += 1;
        last = record.seq;
        if (matches(record)) records.push(record);
        if (records.length === limit || scanned >= MAX_SCAN) break;
      }
      const more = last !== null && last > 1 && (records.length === limit || scanned >= MAX_SCAN);
      return { records, head: await deps.audit.head(), next: more ? last : null };
    },

    /**
     * Validates and audits an export of every matching record (oldest first, up to the head
     * after this export's own record), then returns its lines: JSON lines with a header and a
     * signed manifest (export-file.ts, what `audit verify --file` checks), or CSV for reading.
     */
    async openAuditExport(query: AuditFilter & { format?: unknown }, who: Who): Promise<AsyncIterable<string>> {
      const format = query.format;
      if (format !== 'jsonl' && format !== 'csv') throw invalid('format', 'must be jsonl or csv');
      const matches = auditMatcher(query);
      const filter = Object.fromEntries(
        FILTERS.map((k) => [k, typeof query[k] === 'string' && query[k] !== '' ? String(query[k]) : null]),
      ) as ExportFilter;
      const own = await deps.audit.record({ ...who, action: 'audit.export', target: 'audit', detail: { format, ...filter } });
      const head = { seq: own.seq, hash: own.hash };
      const records = (async function* upToHead() {
        for await (const r of deps.audit.oldestFirst()) {
          if (r.seq > head.seq) return;
          if (matches(r)) yield r;
        }
      })();
      if (format === 'jsonl') {
        const { audit } = deps;
        return exportLines(records, {
          trail: audit.trail,
          head,
          filter,
          exportedAt: own.at,
          publicKey: audit.publicKey,
          sign: (statement) => audit.sign(statement),
        });
      }
      return (async function* lines() {
        yield `${CSV_COLUMNS.join(',')}\n`;
        for await (const r of records)
          yield `${[String(r.seq), r.at, r.actor, r.action, r.target, r.from, JSON.stringify(r.detail), r.prevHash, r.hash, r.sig].map(csvField).join(',')}\n`;
      })();
    },
  };
}
