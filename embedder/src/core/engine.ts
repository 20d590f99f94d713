/**
 * The embedding engine: tokenizer + token policy + batcher + model. The HTTP layer sees only the
 * `EmbeddingEngine` interface; refusals (too long, overloaded, not ready) are values.
 */
import { Batcher, type BatchLimits, type BatchObserver, type Lane } from './batcher.js';
import { CpuGate, ONLINE_SLICING, type Slicing } from './cpu-gate.js';
import { OnlineActivity } from './online-activity.js';
import { defaultBatchMaxTokens } from './batch-budget.js';
import { admitInput, contextLengthMessage, instructed, type TruncationPolicy } from './tokens.js';
import { API_DIMENSIONS, readManifest, type ModelManifest } from '../../../contract/model-manifest.js';
import { startBackgroundRunner } from '../model/background-runner.js';
import { startModelRunner, type EmbedRows, type RunnerOptions } from '../model/runner.js';
import { loadTokenizer, type ModelTokenizer } from '../model/tokenizer.js';
import type { EmbedderConfig } from '../config.js';

export interface EmbedRequest {
  /** Who the work is for (the organization); the batcher shares the model fairly between tenants. */
  readonly tenant: string;
  readonly inputs: readonly string[];
  readonly inputType: 'query' | 'document' | undefined;
  readonly policy: TruncationPolicy;
  /** Aborted when the client goes away; its queued inputs are then dropped. */
  readonly signal?: AbortSignal;
  /** `batch`: a Batch API line, run only on capacity online requests leave idle. Default online. */
  readonly lane?: Lane;
  /**
   * Asked once the exact token count is known, before any model work (token limits hold before
   * the work is done); false refuses the request, which then never reaches the queue.
   */
  readonly admit?: (promptTokens: number) => Promise<boolean>;
}

/** An input that `truncate_prompt_tokens` shortened: its index and its token count before the cut. */
export interface TruncatedInput {
  readonly index: number;
  readonly tokens: number;
}

export type EmbedOutcome =
  | {
      readonly kind: 'embedded';
      readonly vectors: Float32Array[];
      readonly promptTokens: number;
      readonly timing: EmbedTiming;
      /** The inputs truncation cut, in input order (empty when none was); truncation is never silent. */
      readonly truncated?: readonly TruncatedInput[];
    }
  | { readonly kind: 'too_long'; readonly detail: string }
  /** The queue is full for this organization; it would be admitted in about `retryAfterMs`. */
  | { readonly kind: 'overloaded'; readonly retryAfterMs: number }
  | { readonly kind: 'not_ready' }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'refused' };

/**
 * Where one request's time went, in milliseconds. `tokenizeMs`: tokenizing its inputs.
 * `queueMs`: from queueing until the first model call holding one of its inputs started.
 * `inferenceMs`: the summed duration of the model calls that held its inputs (a call shared with
 * other requests counts whole). A request split over several calls may also wait between them,
 * behind other tenants' calls: that time is in neither figure.
 */
export interface EmbedTiming {
  readonly tokenizeMs: number;
  readonly queueMs: number;
  readonly inferenceMs: number;
}

export interface EmbeddingEngine {
  /** The public model id requests must name. */
  readonly modelId: string;
  readonly maxTokens: number;
  isReady(): boolean;
  /** Inputs waiting for the model (not counting the batch it is running). */
  queuedInputs(): number;
  /** Tokens of those inputs. */
  queuedTokens(): number;
  embed(request: EmbedRequest): Promise<EmbedOutcome>;
  /**
   * The online requests in flight (the HTTP layer marks each from arrival to response); the
   * batch lane's calls and event-loop work start between them (online-activity.ts).
   */
  readonly online: OnlineActivity;
  close(): Promise<void>;
}

export interface EngineParts {
  readonly modelId: string;
  readonly manifest: ModelManifest;
  readonly tokenizer: ModelTokenizer;
  /** The online model: one function per session, or one for a single session. */
  readonly embedRows: EmbedRows | readonly EmbedRows[];
  /** The batch lane's own model (a low-priority session); without it the lane shares `embedRows`. */
  readonly backgroundRows?: EmbedRows;
  readonly limits: BatchLimits;
  /** The batch lane's rest factor while online work is about (BATCH_LANE_REST; core/batcher.ts). */
  readonly laneRest?: number;
  readonly isReady: () => boolean;
  readonly close?: () => Promise<void>;
  /** Told of every model call (metrics). */
  readonly onBatch?: BatchObserver;
}

/** A request's token ids, ready for admission and the queue. */
interface Tokenized {
  readonly rows: number[][];
  readonly truncated: TruncatedInput[];
  readonly tokenizeMs: number;
}

/** Composes an engine from its parts (tests pass a fake `embedRows`). */
export function createEngine(parts: EngineParts): EmbeddingEngine {
  const { manifest, tokenizer } = parts;
  const online = new OnlineActivity();
  const batcher = new Batcher(parts.embedRows, parts.limits, parts.onBatch, undefined, parts.backgroundRows, online, {
    ...(parts.laneRest === undefined ? {} : { restFactor: parts.laneRest }),
  });
  const batchGate = new CpuGate(online);
  return {
    online,
    modelId: parts.modelId,
    maxTokens: manifest.maxTokens,
    isReady: parts.isReady,
    queuedInputs: () => batcher.queuedInputs,
    queuedTokens: () => batcher.queuedTokens,
    async embed(request) {
      if (!parts.isReady()) return { kind: 'not_ready' };
      if (request.lane !== 'batch') return embedTokenized(request);
      // A batch line tokenizes one at a time (cpu-gate.ts); its model work then waits in its lane.
      const tokenized = await batchGate.run((slicing) => tokenize(request, slicing));
      return 'kind' in tokenized ? tokenized : submitTokenized(request, tokenized);
    },
    close: parts.close ?? (async () => undefined),
  };

  async function embedTokenized(request: EmbedRequest): Promise<EmbedOutcome> {
    const tokenized = await tokenize(request);
    return 'kind' in tokenized ? tokenized : submitTokenized(request, tokenized);
  }

  /** Pauses after each `slicing.ms` of tokenizing (a batch line's slices are the gate's: shorter, and between online requests). */
  async function tokenize(request: EmbedRequest, slicing: Slicing = ONLINE_SLICING): Promise<Tokenized | EmbedOutcome> {
    const tokenizeStart = performance.now();
    const rows: number[][] = [];
    const truncated: TruncatedInput[] = [];
    let sliceStart = tokenizeStart;
    for (const input of request.inputs) {
      const ids = tokenizer.encode(instructed(input, request.inputType, manifest));
      const admitted = admitInput(ids, request.policy, manifest.maxTokens, tokenizer.closingSpecialTokens);
      if (!admitted.ok) return { kind: 'too_long', detail: contextLengthMessage(admitted.requested, manifest.maxTokens) };
      if (admitted.cutFrom !== undefined) truncated.push({ index: rows.length, tokens: admitted.cutFrom });
      rows.push(admitted.ids);
      if (performance.now() - sliceStart > slicing.ms) {
        await slicing.pause();
        if (request.signal?.aborted) return { kind: 'cancelled' };
        sliceStart = performance.now();
      }
    }
    return { rows, truncated, tokenizeMs: performance.now() - tokenizeStart };
  }

  async function submitTokenized(request: EmbedRequest, { rows, truncated, tokenizeMs }: Tokenized): Promise<EmbedOutcome> {
    const promptTokens = rows.reduce((n, r) => n + r.length, 0);
    if (request.admit && !(await request.admit(promptTokens))) return { kind: 'refused' };
    const outcome = await batcher.submit(request.tenant, rows, request.signal, request.lane);
    if (!outcome.ok)
      return outcome.reason === 'overloaded' ? { kind: 'overloaded', retryAfterMs: outcome.retryAfterMs } : { kind: 'cancelled' };
    const timing = { tokenizeMs, queueMs: outcome.queueMs, inferenceMs: outcome.inferenceMs };
    return { kind: 'embedded', vectors: outcome.vectors, promptTokens, timing, truncated };
  }
}

/** A loaded engine and the promise of its model session. */
export interface LoadedEngine {
  readonly engine: EmbeddingEngine;
  readonly manifest: ModelManifest;
  /** Resolves when the model can serve; rejects if it fails to load. */
  readonly ready: Promise<void>;
}

/** Callbacks for what happens inside the engine. */
export interface EngineHooks {
  /** The model worker died or failed to load. */
  readonly onFatal?: (err: Error) => void;
  /** Every model call (metrics). */
  readonly onBatch?: BatchObserver;
}

/**
 * Reads the manifest and tokenizer now (fast, and errors should stop start-up) and starts the
 * model worker; the engine answers `not_ready` until the session is loaded.
 */
export function loadEngine(config: EmbedderConfig, hooks: EngineHooks = {}): LoadedEngine {
  const manifest = readManifest(config.modelDir);
  const tokenizer = loadTokenizer(config.modelDir);
  let ready = false;
  let dead = false;
  const options: RunnerOptions = {
    modelDir: config.modelDir,
    threads: config.ortIntraOpThreads,
    manifest,
    outDimensions: API_DIMENSIONS,
    onFatal: (err) => {
      dead = true;
      hooks.onFatal?.(err);
    },
  };
  // One worker per online session, each with its own threads (core/batcher.ts feeds them side by side).
  const runners = Array.from({ length: config.modelSessions }, () => startModelRunner(options));
  // With the Batch API on, its lane gets a session of its own at the lowest OS priority (issue 27),
  // one call at a time across all the online sessions' threads.
  const background =
    config.batch?.session === 'background'
      ? startBackgroundRunner({ ...options, threads: config.ortIntraOpThreads * config.modelSessions })
      : undefined;
  const loaded = Promise.all([...runners.map((r) => r.loaded), background?.loaded]).then(() => {
    ready = true;
  });
  const engine = createEngine({
    modelId: config.modelId ?? manifest.id,
    manifest,
    tokenizer,
    embedRows: runners.map((r) => r.embedRows),
    ...(background ? { backgroundRows: background.embedRows } : {}),
    ...(config.batch ? { laneRest: config.batch.laneRest } : {}),
    limits: {
      maxBatchTokens: config.batchMaxTokens ?? defaultBatchMaxTokens(manifest.maxTokens, config.ortIntraOpThreads),
      maxBatchSize: config.batchMaxSize,
      maxQueueInputs: config.queueMaxInputs,
      maxQueueTokens: config.queueMaxTokens,
      maxTenantInputs: config.queueTenantMaxInputs,
      maxTenantTokens: config.queueTenantMaxTokens,
    },
    isReady: () => ready && !dead,
    close: async () => void (await Promise.all([...runners.map((r) => r.close()), background?.close()])),
    onBatch: hooks.onBatch,
  });
  return { engine, manifest, ready: loaded };
}
