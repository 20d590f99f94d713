/**
 * Envoy's local_ratelimit filter in the one shape the gateway uses it: descriptors only, each
 * with its token bucket refilled every second, the filter's own bucket never refusing, and its
 * refusals made with a status nothing else produces so a local reply mapper can give them the
 * catalogue's body (envoy.yaml.tmpl). Used by the per-source limit and the new-key budget.
 */
/** Client addresses one per-address descriptor remembers at once (least recently seen forgotten first). */
export const ADDRESSES_TRACKED = 100_000;

/** One descriptor: the actions that make it for a request, and its bucket. */
interface Descriptor {
  /** The route's rate_limits actions that make each request's descriptor. */
  readonly actions: readonly object[];
  /** The descriptor's entries; one without a value makes one bucket per value (bounded by `maxDynamic`). */
  readonly entries: readonly { key: string; value?: string }[];
  /** Tokens added each second; the bucket holds twice that (the burst). */
  readonly perSecond: number;
}

export interface LocalRateLimit {
  readonly name: string;
  readonly statPrefix: string;
  /** The status it refuses with, mapped by envoy.yaml.tmpl. */
  readonly refusedStatus: number;
  /** A request is refused when any bucket of a descriptor it makes is empty. */
  readonly descriptors: readonly Descriptor[];
  readonly maxDynamic?: number;
}

/** The filter's entry in an http_filters list. */
export function localRateLimitFilter(limit: LocalRateLimit): object {
  const bucket = (tokens: number, fill: number) => ({ max_tokens: tokens, tokens_per_fill: fill, fill_interval: '1s' });
  const always = { default_value: { numerator: 100, denominator: 'HUNDRED' } };
  return {
    name: limit.name,
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit',
      stat_prefix: limit.statPrefix,
      // The filter flags its reply only after the local reply mapper ran, so the mapper can only
      // tell it apart by this status (and authz's own 429s and 503s keep their bodies).
      status: { code: limit.refusedStatus },
      // The filter's own bucket is never the one that refuses: only the descriptors' are.
      token_bucket: bucket(4_294_967_295, 4_294_967_295),
      filter_enabled: always,
      filter_enforced: always,
      ...(limit.maxDynamic === undefined ? {} : { max_dynamic_descriptors: limit.maxDynamic }),
      rate_limits: limit.descriptors.map((d) => ({ actions: d.actions })),
      descriptors: limit.descriptors.map((d) => ({ entries: d.entries, token_bucket: bucket(2 * d.perSecond, d.perSecond) })),
    },
  };
}

/** The filter as one YAML flow item (envoy.yaml.tmpl). */
export function localRateLimit(limit: LocalRateLimit): string {
  return `- ${JSON.stringify(localRateLimitFilter(limit))}`;
}
