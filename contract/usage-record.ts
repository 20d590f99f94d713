/**
 * The usage record: what one answered request (or one Batch API line) used, as the usage stream
 * holds it. Identifiers and counts only, never text. Only the settlement functions write it
 * (contract/redis/settlement.lua's `record` for online requests, batch.lua's `commit` for batch
 * lines; each XADD must write exactly USAGE_FIELDS: test/contract/usage-record.test.ts checks
 * both), from the grant or batch record, at Redis's clock; admin reads it back for reports and
 * exports.
 */

/** One answered request's usage. */
export interface UsageRecord {
  readonly org: string;
  readonly keyId: string;
  readonly model: string;
  readonly requestId: string;
  readonly tokens: number;
  /** When it was recorded (ms since the epoch, Redis's clock). */
  readonly time: number;
  /** An online request, or a line of a batch. */
  readonly kind: UsageKind;
  /** The batch's id for a batch line, '' for an online request. */
  readonly batch: string;
}

type UsageKind = 'online' | 'batch';

/** The stream field that holds each part of the record, in the order the settlement writes them. */
export const USAGE_FIELDS: Readonly<Record<keyof UsageRecord, string>> = Object.freeze({
  org: 'org',
  keyId: 'key',
  model: 'model',
  requestId: 'request_id',
  tokens: 'tokens',
  time: 'ts',
  kind: 'kind',
  batch: 'batch',
});

/** One recorded request with its stream entry's id. */
export interface UsageEntry extends UsageRecord {
  readonly streamId: string;
}

/** A usage stream entry's fields to a UsageEntry; a missing field reads as '' or 0. */
export function decodeUsage(streamId: string, fields: Readonly<Record<string, string>>): UsageEntry {
  const f = USAGE_FIELDS;
  return {
    streamId,
    org: fields[f.org] ?? '',
    keyId: fields[f.keyId] ?? '',
    model: fields[f.model] ?? '',
    requestId: fields[f.requestId] ?? '',
    tokens: Number(fields[f.tokens] ?? 0),
    time: Number(fields[f.time] ?? 0),
    // Records written before the field existed were all online requests.
    kind: fields[f.kind] === 'batch' ? 'batch' : 'online',
    batch: fields[f.batch] ?? '',
  };
}

/**
 * One organization's usage on one UTC day, as its daily counters hold it: the settlement
 * functions add each record to them (settlement.lua's `record` and `void`, batch.lua's `commit`;
 * test/contract/usage-record.test.ts checks they write only USAGE_DAILY_FIELDS), and admin's
 * reports and budgets read them instead of scanning the stream.
 */
export interface DailyUsage {
  readonly requests: number;
  readonly tokens: number;
  /** The part of `tokens` that batch lines used. */
  readonly batchTokens: number;
  /** Each model's share. */
  readonly models: Readonly<Record<string, { readonly requests: number; readonly tokens: number }>>;
}

/** The daily counters' hash fields: the totals, and per model a field named by a prefix and the model's id. */
export const USAGE_DAILY_FIELDS = Object.freeze({
  requests: 'requests',
  tokens: 'tokens',
  batchTokens: 'batch_tokens',
  modelRequestsPrefix: 'requests:',
  modelTokensPrefix: 'tokens:',
});

/** A daily counters hash to a DailyUsage; a missing field reads as 0. */
export function decodeDailyUsage(fields: Readonly<Record<string, string>>): DailyUsage {
  const f = USAGE_DAILY_FIELDS;
  const count = (field: string) => Number(fields[field] ?? 0);
  const models: Record<string, { requests: number; tokens: number }> = {};
  for (const field of Object.keys(fields)) {
    const prefix = [f.modelRequestsPrefix, f.modelTokensPrefix].find((p) => field.startsWith(p));
    if (prefix === undefined) continue;
    const model = field.slice(prefix.length);
    models[model] ??= { requests: count(f.modelRequestsPrefix + model), tokens: count(f.modelTokensPrefix + model) };
  }
  return { requests: count(f.requests), tokens: count(f.tokens), batchTokens: count(f.batchTokens), models };
}
