/**
 * authz's Prometheus metrics on a Registry of its own (never prom-client's global one), so tests
 * and several servers in one process do not collide.
 *
 * Invariant: no label is ever derived from a request. Outcomes and store commands come from
 * fixed lists, codes from the problem catalogue; keys, organizations, models, paths and
 * headers never become labels (an organization id would also make the series unbounded).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { catalogue } from '../../../openapi/problems.js';
import type { KeyLookupResult } from '../store/key-cache.js';

/** How a Check ended: a decision (allowed, denied) or a fault (unavailable, error). */
export type CheckOutcome = 'allowed' | 'denied' | 'unavailable' | 'error';

/** What the Check decorator learned about one Check (all safe: outcome, code, duration). */
interface CheckFacts {
  readonly outcome: CheckOutcome;
  /** The catalogue code of a denial; "" otherwise. */
  readonly code: string;
  readonly seconds: number;
}

export interface AuthzMetrics {
  /** The exposition format's content type, from the registry. */
  readonly contentType: string;
  observeCheck(facts: CheckFacts): void;
  /** One store command: its name (a RedisStore method), duration, and whether it failed. */
  observeStoreCommand(command: string, seconds: number, failed: boolean): void;
  /** One key lookup: from the key cache (hit), Redis (miss), a lookup in flight (merged), or shed; or a background refresh. */
  observeKeyLookup(result: KeyLookupResult): void;
  /** A Check refused for its caller token (no token, a wrong one, or one dropped by a rotation). */
  observeCallerRefused(): void;
  /** Where the Redis gauge reads from at scrape time. */
  watchRedis(isReady: () => boolean): void;
  /** The text exposition of every metric. */
  render(): Promise<string>;
}

/** Denial codes not in the catalogue share this label, so the label set stays bounded. */
const UNKNOWN_CODE = 'unknown';

// authz answers in about a millisecond; the tail up to REDIS_TIMEOUT_MS (500 ms) and past it matters.
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The store commands of a Check; their error series exist from the start. */
const HOT_PATH_COMMANDS = ['lookupKey', 'checkLimits'] as const;

/** How a key lookup can be answered (key-cache.ts); each series exists from the start. */
const KEY_LOOKUP_RESULTS: readonly KeyLookupResult[] = ['hit', 'miss', 'merged', 'shed', 'refresh'];

/** The `code` label for a denial: the catalogue code, or "unknown" (pure). */
export function codeLabel(code: string | undefined): string {
  if (code === undefined || code === '') return '';
  return catalogue.has(code as never) ? code : UNKNOWN_CODE;
}

/**
 * How often Node's default metrics sample the event loop's delay: every 100 ms, not prom-client's
 * 10 ms, whose timer woke an idle authz 98 times and cost it 6.6 ms of CPU a second (the
 * embedder's metrics.ts has the measurement).
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** Builds the metrics on a fresh Registry, with Node's default process metrics. */
export function createAuthzMetrics(): AuthzMetrics {
  const register = new Registry();
  const registers = [register];
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const checks = new Counter({
    name: 'authz_checks_total',
    help: 'Checks by outcome (allowed, denied, unavailable, error) and denial code ("" unless denied).',
    labelNames: ['outcome', 'code'],
    registers,
  });
  const checkDuration = new Histogram({
    name: 'authz_check_duration_seconds',
    help: 'Check duration by outcome.',
    labelNames: ['outcome'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const redisDuration = new Histogram({
    name: 'authz_redis_command_duration_seconds',
    help: 'Duration of one store command (one Redis round trip) by command.',
    labelNames: ['command'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const redisErrors = new Counter({
    name: 'authz_redis_errors_total',
    help: 'Store commands that failed (Redis unreachable, slow or disconnected) by command.',
    labelNames: ['command'],
    registers,
  });
  const keyLookups = new Counter({
    name: 'authz_key_cache_lookups_total',
    help: 'Key lookups by result: hit (from the key cache), miss (from Redis), merged (joined a lookup in flight), shed (too many unknown ids in flight: 503); refresh counts background reloads of entries near the end of their TTL.',
    labelNames: ['result'],
    registers,
  });
  // One unlabelled counter: a flood of refused callers costs an increment each, and a rotation
  // done out of order (deploy/README.md) shows here before anyone reads a log.
  const callersRefused = new Counter({
    name: 'authz_callers_refused_total',
    help: 'Checks refused with UNAUTHENTICATED for their caller token (none, a wrong one, or one a rotation dropped): never Envoy with the current token.',
    registers,
  });
  let redisReady: () => boolean = () => false;
  // Read at scrape time from the connection itself, so it cannot drift from the truth.
  new Gauge({
    name: 'authz_redis_up',
    help: '1 while the Redis connection is up; Checks fail closed while it is 0.',
    registers,
    collect() {
      this.set(redisReady() ? 1 : 0);
    },
  });
  // Zero-initialised, so rate() and increase() see the first event and dashboards show 0, not "no data".
  for (const outcome of ['allowed', 'unavailable', 'error'] as const) checks.inc({ outcome, code: '' }, 0);
  for (const result of KEY_LOOKUP_RESULTS) keyLookups.inc({ result }, 0);
  for (const command of HOT_PATH_COMMANDS) redisErrors.inc({ command }, 0);
  // Every Check passes here several times; cached children skip prom-client's label hashing.
  const checkChild = cached((outcome, code) => checks.labels({ outcome, code }));
  const durationChild = cached((outcome) => checkDuration.labels({ outcome }));
  const redisChild = cached((command) => redisDuration.labels({ command }));
  const redisErrorChild = cached((command) => redisErrors.labels({ command }));
  const lookupChild = cached((result) => keyLookups.labels({ result }));
  return {
    contentType: register.contentType,
    observeCheck(facts) {
      const code = facts.outcome === 'denied' ? codeLabel(facts.code) || UNKNOWN_CODE : '';
      checkChild(facts.outcome, code).inc();
      durationChild(facts.outcome).observe(facts.seconds);
    },
    observeStoreCommand(command, seconds, failed) {
      redisChild(command).observe(seconds);
      if (failed) redisErrorChild(command).inc();
    },
    observeKeyLookup: (result) => lookupChild(result).inc(),
    observeCallerRefused: () => callersRefused.inc(),
    watchRedis(isReady) {
      redisReady = isReady;
    },
    render: () => register.metrics(),
  };
}

// Label sets are bounded (fixed lists, catalogue codes, method names), so the map is too.
function cached<T>(make: (...values: string[]) => T): (...values: string[]) => T {
  const children = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = children.get(key);
    if (child === undefined) {
      child = make(...values);
      children.set(key, child);
    }
    return child;
  };
}
