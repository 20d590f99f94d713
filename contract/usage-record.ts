/**
 * The usage record: what one answered request used, as the usage stream holds it. Identifiers
 * and counts only, never text. The embedder writes it through the settlement functions
 * (contract/redis/settlement.lua's `record`, whose XADD must write exactly USAGE_FIELDS:
 * test/contract/usage-record.test.ts checks it); admin reads it back for reports and exports.
 */

/** One answered request's usage. */
export interface UsageRecord {
  readonly org: string;
  readonly keyId: string;
  readonly model: string;
  readonly requestId: string;
  readonly tokens: number;
  /** When the embedder recorded it (ms since the epoch, the embedder's clock). */
  readonly time: number;
}

/** The stream field that holds each part of the record, in the order the settlement writes them. */
export const USAGE_FIELDS: Readonly<Record<keyof UsageRecord, string>> = Object.freeze({
  org: 'org',
  keyId: 'key',
  model: 'model',
  requestId: 'request_id',
  tokens: 'tokens',
  time: 'ts',
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
  };
}
