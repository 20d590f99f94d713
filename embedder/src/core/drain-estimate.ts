/**
 * An honest `retry-after` for `overloaded` (issue 25): how long until the refused request would
 * be admitted. The model's pace is measured (tokens per second of model time, a moving average
 * over recent calls); the organization is served its fair share of it (the pace divided by the
 * organizations waiting); its queued tokens drain first. Requests it was already told to retry
 * hold their place: each refusal books the slot after the previous one's, so four parallel
 * requests are told to come back one after another (each drains before the next returns)
 * instead of all at once, one second later, to be refused again. Pure: the clock is passed in.
 */

/** The pace assumed before any model call was measured: short sentences on one CPU core. */
const INITIAL_TOKENS_PER_SECOND = 2_000;
/** Weight of the newest model call in the moving average. */
const SMOOTHING = 0.2;
/** A booked slot not claimed this long after it ended is forgotten (the client gave up). */
const SLOT_GRACE_MS = 30_000;
/** A little past the estimate, so a retry finds the queue drained rather than almost. */
const MARGIN = 1.1;

interface Slot {
  readonly end: number;
}

/** The drain-time estimator of one engine. */
export class DrainEstimate {
  private tokensPerSecond = INITIAL_TOKENS_PER_SECOND;
  private readonly slots = new Map<string, Slot[]>();

  /** One model call: `tokens` real (unpadded) tokens in `seconds`. */
  observe(tokens: number, seconds: number): void {
    if (tokens <= 0 || seconds <= 0) return;
    this.tokensPerSecond = this.tokensPerSecond * (1 - SMOOTHING) + (tokens / seconds) * SMOOTHING;
  }

  /**
   * Milliseconds until `tenant`'s refused request of `tokens` would fit: its own queue (`queued`
   * tokens) and the requests it was told to retry before drain first, at its share of the pace
   * (`waiting` organizations). With `global`, the whole queue must drain instead. Books the slot.
   */
  refused(tenant: string, request: { tokens: number; queued: number; waiting: number; global?: number }, now: number): number {
    const share = this.tokensPerSecond / Math.max(1, request.waiting);
    const slots = (this.slots.get(tenant) ?? []).filter((slot) => slot.end + SLOT_GRACE_MS > now);
    const ownDrain = (request.queued / share) * 1000;
    const queueDrain = request.global === undefined ? 0 : (request.global / this.tokensPerSecond) * 1000;
    const start = Math.max(now + ownDrain * MARGIN, now + queueDrain * MARGIN, slots.at(-1)?.end ?? 0);
    slots.push({ end: start + (request.tokens / share) * 1000 * MARGIN });
    this.slots.set(tenant, slots);
    if (this.slots.size > 10_000) this.slots.delete(this.slots.keys().next().value!);
    return Math.max(0, start - now);
  }

  /** `tenant` had a request admitted: the earliest slot it was booked is taken. */
  admitted(tenant: string): void {
    const slots = this.slots.get(tenant);
    if (!slots) return;
    slots.shift();
    if (slots.length === 0) this.slots.delete(tenant);
  }
}
