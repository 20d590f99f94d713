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
