/**
 * Dynamic batching, as text-embeddings-inference does it, made fair between tenants: inputs of
 * concurrent requests wait in bounded per-tenant queues (tenant-queues.ts); whenever the model is
 * idle, the next batch is cut, led by the tenant served fewest tokens, within a padded-token
 * budget and a maximum size. No wait timer: whatever queued while the model was busy forms the
 * next batch. The online model may be several sessions (MODEL_SESSIONS, one ONNX Runtime thread
 * each by default): each idle one takes the next batch, so calls run side by side, one per core,
 * instead of one call split across the cores, whose threads meet at a barrier after every
 * operator and wait there for the slowest (on 2 cores, 17–33 % more inputs per second and
 * 9–13 % less CPU per input on the default model: docs/benchmarks-history.md, 2026-11-27 (late)).
 * One wait, only while another session runs: an idle session does not start a call of fewer
 * inputs than the running online calls hold on average until more arrive or a short gather
 * window ends (GATHER_FRACTION of the mean online call, GATHER_MAX_MS at most). Without it, a
 * session that frees up while its clients' next requests are still arriving runs them one or
 * two at a time: 32 one-sentence clients on the default model made calls of 5-6 inputs on
 * average, half of them of one; with it, of 13-14, and 7-9 % more inputs per second at 8-10 %
 * less CPU per input (docs/benchmarks-history.md, 2026-11-27 (fifth round)). A lone request,
 * or one beside calls as small as itself, never waits: with every session idle, or as many
 * inputs queued as a running call holds, the call starts at once.
 *
 * Two lanes, online first: the Batch API's lines wait in a lane of their own (fair between
 * tenants too) that the model serves only when no online input waits, so bulk work runs on the
 * capacity online requests leave idle. Given a model of its own (model/background-runner.ts:
 * a session at the lowest OS priority), the lane runs its calls there and the OS scheduler gives
 * online work the CPU first: no online request waits for a batch call. Its calls still slowed
 * the online ones they ran beside (each model call's threads meet at barriers, and one of them
 * preempted stalls the call; the two sessions share caches), so a lane call starts only while
 * the online model is idle. Sharing the online model, an online request that arrives while a
 * batch-lane call runs waits for that call. Either way, the lane's next call waits while an
 * online request is in flight anywhere in the process (OnlineActivity: from its arrival to its
 * response, up to LANE_MAX_WAIT_MS), and while online work has been seen lately
 * (ONLINE_RECENT_MS) a lane call holds one input, so an online request meets at most one
 * input's worth of lane work, after which the lane rests twice the call's duration
 * (LANE_REST_FACTOR, BATCH_LANE_REST): a lane call slows every part of an online request that runs beside it
 * (Envoy and authz too, through shared cores and caches), so the lane keeps to a third of the
 * time. Alternated on the default model (docs/benchmarks-history.md, 2026-11-27), online p99
 * during a batch ÷ alone: calls of a quarter of the budget 1.10–1.63 by round; one input a call
 * 1.16–1.38; one input a call, started between online requests, 1.06–1.65; and resting after
 * each, 1.09 and 1.25 (pooled 1.11 against 1.36 without the rest in the same run). With no
 * online work about, the lane's calls are full, it never rests, and its pace is the model's.
 *
 * The model and the clock are injected (`EmbedRows`, `now`), so the policy is unit-tested with fakes.
 */
import type { EmbedRows } from '../model/runner.js';
import { DrainEstimate } from './drain-estimate.js';
import type { OnlineActivity, SetTimer } from './online-activity.js';
import { TenantQueues, type QueueBounds } from './tenant-queues.js';

/** The batch budget and the queue bounds (see QueueBounds). */
export type BatchLimits = QueueBounds;

/** `online`: API requests; `batch`: the Batch API's lines, run only when no online input waits. */
export type Lane = 'online' | 'batch';

/** After an online request, the batch lane's calls stay small for this long. */
const ONLINE_RECENT_MS = 2_000;
/** While online work is about, a batch-lane call holds one input (of any length the budget admits). */
const LANE_INPUTS_WHILE_ONLINE = 1;
/** How long the lane's next call waits for the online requests in flight to end before it starts anyway. */
const LANE_MAX_WAIT_MS = 500;
/**
 * While online work is about, after each lane call the lane rests this many times the call's
 * duration (BATCH_LANE_REST): at 2 it holds the cores at most a third of the time, and an online
 * request's path (Envoy, authz, this event loop, the online model) mostly runs beside no lane
 * call at all.
 */
const LANE_REST_FACTOR = 2;

/** An idle session waits for a fuller call at most this share of the mean online call's duration… */
const GATHER_FRACTION = 0.25;
/** …and never longer than this. */
const GATHER_MAX_MS = 20;
/** Weight of the latest online call in the mean duration the gather window is cut from. */
const CALL_MS_WEIGHT = 0.2;

/**
 * The lane's manners: its rest factor (0: none) and the timer that ends a rest or a gather
 * window (tests pass a fake).
 */
export interface LaneOptions {
  readonly restFactor?: number;
  readonly setTimer?: SetTimer;
}

/** What one model call was: inputs, padded tokens (longest × inputs) and its duration. */
export interface BatchStats {
  readonly size: number;
  readonly paddedTokens: number;
  readonly seconds: number;
}

/** Told of every model call (metrics); must not throw. */
export type BatchObserver = (stats: BatchStats) => void;

/**
 * Being full is a value, not an error; model faults reject the promise. `queueMs`: from submit
 * until the first batch holding one of the request's inputs started. `inferenceMs`: the summed
 * duration of the model calls that held its inputs (each call counted whole, as it is shared).
 */
export type SubmitOutcome =
  | { readonly ok: true; readonly vectors: Float32Array[]; readonly queueMs: number; readonly inferenceMs: number }
  | { readonly ok: false; readonly reason: 'overloaded'; readonly retryAfterMs: number }
  | { readonly ok: false; readonly reason: 'cancelled' };

interface Job {
  readonly tenant: string;
  /** The lane it waits in. */
  readonly queues: TenantQueues<Entry>;
  readonly vectors: (Float32Array | undefined)[];
  readonly submittedAt: number;
  queueMs: number | undefined;
  inferenceMs: number;
  remaining: number;
  done: boolean;
  readonly settle: (outcome: SubmitOutcome) => void;
  readonly fail: (err: Error) => void;
}

interface Entry {
  readonly job: Job;
  readonly index: number;
  readonly row: readonly number[];
}

/** The bounded per-tenant queues and the loop that feeds each idle model session the next batch. */
export class Batcher {
  private readonly queues: TenantQueues<Entry>;
  /** The batch lane: bounded by what the batch runner keeps in flight, not by these bounds. */
  private readonly background: TenantQueues<Entry>;
  private readonly smallBudget: { maxBatchTokens: number; maxBatchSize: number };
  private lastOnline = Number.NEGATIVE_INFINITY;
  /** The model's measured pace, for an honest retry-after when a request is refused. */
  private readonly drain = new DrainEstimate();
  /** The online model's sessions; `idle` those without a call. */
  private readonly models: readonly EmbedRows[];
  private readonly idle: EmbedRows[];
  /** Batch-lane calls running (on its own model, or on online sessions when it shares them). */
  private laneCalls = 0;
  /** Since when the lane has had work held back by online requests in flight. */
  private laneHeldSince: number | undefined;
  /** While online work is about, the lane's next call starts no earlier than this (LANE_REST_FACTOR). */
  private laneRestUntil = Number.NEGATIVE_INFINITY;
  /** Online calls running, and their inputs (the gather target is their average). */
  private onlineCalls = 0;
  private onlineCallInputs = 0;
  /** The online calls' mean duration (ms, weighted to the latest), and since when an idle session has waited for a fuller call. */
  private meanCallMs = 0;
  private gatherSince: number | undefined;
  /** Why a timer will pump again (a lane's rest, a gather window): one timer for each at most. */
  private readonly wakeups = new Set<'rest' | 'gather'>();
  private readonly restFactor: number;
  private readonly setTimer: SetTimer;

  /**
   * `embed`: the online model, one function per session (calls on one run one at a time).
   * `backgroundEmbed`: the batch lane's own model; without it the lane shares `embed`.
   * `online`: the online requests in flight (online-activity.ts); the lane's calls start between them.
   */
  constructor(
    embed: EmbedRows | readonly EmbedRows[],
    limits: BatchLimits,
    private readonly onBatch: BatchObserver = () => undefined,
    private readonly now: () => number = () => performance.now(),
    private readonly backgroundEmbed?: EmbedRows,
    private readonly online?: OnlineActivity,
    lane: LaneOptions = {},
  ) {
    this.models = typeof embed === 'function' ? [embed] : [...embed];
    if (this.models.length === 0) throw new Error('the batcher needs at least one model session');
    this.idle = [...this.models];
    this.restFactor = lane.restFactor ?? LANE_REST_FACTOR;
    this.setTimer = lane.setTimer ?? setTimeout;
    online?.onIdle(() => this.pump());
    this.queues = new TenantQueues(limits);
    this.background = new TenantQueues({
      ...limits,
      maxQueueInputs: Infinity,
      maxQueueTokens: Infinity,
      maxTenantInputs: Infinity,
      maxTenantTokens: Infinity,
    });
    this.smallBudget = { maxBatchTokens: limits.maxBatchTokens, maxBatchSize: LANE_INPUTS_WHILE_ONLINE };
  }

  /** Inputs waiting in the batch lane. */
  get backgroundInputs(): number {
    return this.background.inputs;
  }

  /** Inputs waiting (not yet handed to the model). */
  get queuedInputs(): number {
    return this.queues.inputs;
  }

  /** Tokens of the inputs waiting. */
  get queuedTokens(): number {
    return this.queues.tokens;
  }

  /**
   * Queues one request's rows for `tenant`; resolves with their vectors in row order. Refused
   * (`overloaded`) when the tenant would pass its share or the queue its bounds; see `admits`.
   */
  submit(tenant: string, rows: readonly (readonly number[])[], signal?: AbortSignal, lane: Lane = 'online'): Promise<SubmitOutcome> {
    const tokens = rows.reduce((sum, row) => sum + row.length, 0);
    const queues = lane === 'online' ? this.queues : this.background;
    if (lane === 'online') this.lastOnline = this.now();
    if (!queues.admits(tenant, rows.length, tokens)) {
      const retryAfterMs = this.drain.refused(
        tenant,
        {
          tokens,
          queued: queues.tokensOf(tenant),
          waiting: queues.activeTenants,
          ...(queues.tokensOf(tenant) === 0 ? { global: queues.tokens } : {}),
        },
        this.now(),
      );
      return Promise.resolve({ ok: false, reason: 'overloaded', retryAfterMs });
    }
    if (lane === 'online') this.drain.admitted(tenant);
    if (rows.length === 0) return Promise.resolve({ ok: true, vectors: [], queueMs: 0, inferenceMs: 0 });
    if (signal?.aborted) return Promise.resolve({ ok: false, reason: 'cancelled' });

    return new Promise<SubmitOutcome>((resolve, reject) => {
      const job: Job = {
        tenant,
        queues,
        vectors: new Array<Float32Array | undefined>(rows.length),
        submittedAt: this.now(),
        queueMs: undefined,
        inferenceMs: 0,
        remaining: rows.length,
        done: false,
        settle: (outcome) => {
          job.done = true;
          resolve(outcome);
        },
        fail: (err) => {
          job.done = true;
          reject(err);
        },
      };
      queues.push(
        tenant,
        rows.map((row, index) => ({ job, index, row })),
      );
      signal?.addEventListener('abort', () => this.drop(job, { ok: false, reason: 'cancelled' }), { once: true });
      this.pump();
    });
  }

  /** Whether online requests in flight hold the lane back now (for LANE_MAX_WAIT_MS at most). */
  private laneHeld(): boolean {
    if (!this.online?.busy || this.background.inputs === 0) {
      this.laneHeldSince = undefined;
      return false;
    }
    this.laneHeldSince ??= this.now();
    return this.now() - this.laneHeldSince < LANE_MAX_WAIT_MS;
  }

  /** Whether the lane rests after its last call now; a timer pumps again when the rest is over. */
  private laneResting(): boolean {
    const rest = this.laneRestUntil - this.now();
    if (rest <= 0 || this.background.inputs === 0) return false;
    this.pumpAfter('rest', rest);
    return true;
  }

  /** Pumps again in `ms`, unless a timer for `reason` is already set; never keeps a closing process alive. */
  private pumpAfter(reason: 'rest' | 'gather', ms: number): void {
    if (this.wakeups.has(reason)) return;
    this.wakeups.add(reason);
    this.setTimer(() => {
      this.wakeups.delete(reason);
      this.pump();
    }, ms).unref?.();
  }

  /**
   * Whether an idle session should wait for a fuller call now: online inputs wait, fewer than the
   * running online calls hold on average, and the gather window (from the first such wait) is not
   * over; a timer pumps again when it ends.
   */
  private gathering(): boolean {
    const queued = this.queues.inputs;
    if (queued === 0 || this.onlineCalls === 0 || queued * this.onlineCalls >= this.onlineCallInputs) {
      this.gatherSince = undefined;
      return false;
    }
    const now = this.now();
    this.gatherSince ??= now;
    const left = Math.min(GATHER_MAX_MS, GATHER_FRACTION * this.meanCallMs) - (now - this.gatherSince);
    if (left <= 0) {
      this.gatherSince = undefined;
      return false;
    }
    this.pumpAfter('gather', left);
    return true;
  }

  private pump(): void {
    const onlineLately = this.now() - this.lastOnline < ONLINE_RECENT_MS;
    const held = this.laneHeld() || this.laneResting();
    const onlineIdle = this.idle.length === this.models.length;
    // With a model of its own, the lane's next call starts only while every online session is
    // idle, no online input waits and no online request is in flight, and holds one input while
    // online work is about: a call already running goes on beside an online call (at the lowest
    // priority), but the two rarely meet, and then briefly.
    if (this.backgroundEmbed && !held && this.laneCalls === 0 && onlineIdle && this.queues.inputs === 0) {
      const lines = onlineLately ? this.background.nextBatch(this.smallBudget) : this.background.nextBatch();
      if (lines.length > 0) {
        this.laneHeldSince = undefined;
        this.laneCalls++;
        this.call(this.backgroundEmbed, lines, () => this.laneCalls--);
      }
    }
    while (this.idle.length > 0) {
      if (this.gathering()) return;
      let batch = this.queues.nextBatch();
      let lane = false;
      // Sharing the online sessions, the lane takes an idle one when no online input waits: while
      // online work is about, one call at a time and only with every session idle (as with a
      // model of its own); otherwise every idle session.
      const laneMay = !onlineLately || (this.laneCalls === 0 && this.idle.length === this.models.length);
      if (batch.length === 0 && !this.backgroundEmbed && !held && laneMay) {
        batch = onlineLately ? this.background.nextBatch(this.smallBudget) : this.background.nextBatch();
        lane = batch.length > 0;
        // Each lane call waits anew, as with a model of its own.
        if (lane) this.laneHeldSince = undefined;
      }
      if (batch.length === 0) return;
      const model = this.idle.pop()!;
      if (lane) this.laneCalls++;
      this.call(model, batch, () => {
        this.idle.push(model);
        if (lane) this.laneCalls--;
      });
    }
  }

  /** One model call on `model`; `done` marks its model free before the next pump. */
  private call(model: EmbedRows, batch: readonly Entry[], done: () => void): void {
    const started = this.now();
    const jobs = new Set(batch.map((e) => e.job));
    const online = batch[0]?.job.queues === this.queues;
    if (online) {
      this.onlineCalls++;
      this.onlineCallInputs += batch.length;
    }
    for (const job of jobs) job.queueMs ??= started - job.submittedAt;
    const finished = (): number => {
      const seconds = (this.now() - started) / 1000;
      for (const job of jobs) job.inferenceMs += seconds * 1000;
      return seconds;
    };
    let seconds: number | undefined;
    model(batch.map((e) => e.row))
      .then((vectors) => {
        seconds = finished();
        this.deliver(batch, vectors);
      })
      .catch((err: unknown) => {
        seconds ??= finished();
        this.failBatch(jobs, err instanceof Error ? err : new Error(String(err)));
      })
      .finally(() => {
        const longest = Math.max(...batch.map((e) => e.row.length));
        // The online model's pace tells a refused request when to come back; the background
        // model's pace, at the lowest priority, says nothing about it. Sessions run side by
        // side, so the whole model's pace is one call's times the sessions (a refusal comes when
        // the queue is full, and then every session is busy).
        if (model !== this.backgroundEmbed) {
          this.drain.observe(batch.reduce((sum, e) => sum + e.row.length, 0) * this.models.length, seconds ?? 0);
        }
        if (online) {
          this.onlineCalls--;
          this.onlineCallInputs -= batch.length;
          const ms = (seconds ?? 0) * 1000;
          this.meanCallMs = this.meanCallMs === 0 ? ms : (1 - CALL_MS_WEIGHT) * this.meanCallMs + CALL_MS_WEIGHT * ms;
        }
        this.onBatch({ size: batch.length, paddedTokens: longest * batch.length, seconds: seconds ?? 0 });
        const laneCall = batch[0]?.job.queues === this.background;
        if (laneCall && this.now() - this.lastOnline < ONLINE_RECENT_MS) {
          this.laneRestUntil = this.now() + this.restFactor * (this.now() - started);
        }
        done();
        this.pump();
      });
  }

  private deliver(batch: readonly Entry[], vectors: readonly Float32Array[]): void {
    if (vectors.length !== batch.length) throw new Error(`model returned ${vectors.length} vectors for ${batch.length} inputs`);
    batch.forEach((entry, i) => {
      const { job } = entry;
      if (job.done) return;
      job.vectors[entry.index] = vectors[i];
      job.remaining -= 1;
      if (job.remaining === 0) {
        job.settle({ ok: true, vectors: job.vectors as Float32Array[], queueMs: job.queueMs ?? 0, inferenceMs: job.inferenceMs });
      }
    });
  }

  /** A failed model call fails only the requests that had inputs in it. */
  private failBatch(jobs: ReadonlySet<Job>, err: Error): void {
    for (const job of jobs) {
      if (job.done) continue;
      job.queues.remove(job.tenant, (entry) => entry.job === job);
      job.fail(err);
    }
  }

  private drop(job: Job, outcome: SubmitOutcome): void {
    if (job.done) return;
    job.queues.remove(job.tenant, (entry) => entry.job === job);
    job.settle(outcome);
  }
}
