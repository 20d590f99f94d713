/**
 * What one answered request used, as it is recorded: identifiers and counts, never text. Policy
 * owns the shape; the store writes and reads it.
 */

/** One successful request's usage. */
export interface UsageRecord {
  readonly org: string;
  readonly keyId: string;
  readonly model: string;
  readonly requestId: string;
  readonly tokens: number;
  readonly time: number;
}
