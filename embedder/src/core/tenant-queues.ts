/**
 * One FIFO queue per tenant (organization) and the fair order between them: deficit round-robin
 * counted in tokens, in its virtual-time form (start-time fair queueing). Each tenant carries the
 * tokens it has been served; the tenant served least leads the next batch, and the virtual time is
 * what the current leader had been served when it led. A tenant that starts queueing joins at the
 * virtual time (or at its own count, if that is still ahead), so its first input waits about one
 * batch, yet idling earns it no credit, and emptying its queue and refilling it at once does not
 * let it jump ahead of tenants that kept waiting.
 *
 * The leader's inputs are cut as one FIFO queue always was (oldest first, similar lengths, within
 * the padded budget); room left in the batch goes to the other tenants' oldest inputs, least
 * served first, when they are of similar length: a 10-token request is not padded to 512 tokens
 * (and made to wait for a full-cost model call) just to fill its batch with another's inputs.
 *
 * Pure: no clock, no timers, no model. A tenant with nothing queued is remembered only while its
 * count is ahead of the virtual time (and at most MAX_IDLE_TENANTS of them), so memory stays
 * bounded however many tenants ever called.
 */
import { selectBatch, type BatchBudget } from './batch-selection.js';

/** Anything queued: one input's token ids. */
export interface Queued {
  readonly row: readonly number[];
}

/** The batch budget plus the queue bounds, global and per tenant. */
export interface QueueBounds extends BatchBudget {
  /** Inputs and tokens allowed to wait, all tenants together. */
  readonly maxQueueInputs: number;
  readonly maxQueueTokens: number;
  /** Inputs and tokens one tenant may have waiting (its share). */
  readonly maxTenantInputs: number;
  readonly maxTenantTokens: number;
}

interface TenantQueue<T> {
  entries: T[];
  tokens: number;
  /** Tokens handed to the model for this tenant, on the shared virtual-time scale. */
  served: number;
  /** Join order: ties in `served` go to the tenant that has waited longest. */
  readonly joined: number;
}

/** Another tenant's input joins a batch only if it at most doubles the batch's longest input. */
const MAX_FILL_WIDENING = 2;

/** Idle tenants remembered beyond this are forgotten oldest first (they lose only a small debt). */
const MAX_IDLE_TENANTS = 10_000;

const tokensOf = (items: readonly Queued[]): number => items.reduce((sum, item) => sum + item.row.length, 0);

/** Per-tenant queues with bounds and a fair `nextBatch`. */
export class TenantQueues<T extends Queued> {
  private readonly tenants = new Map<string, TenantQueue<T>>();
  /** Served counts of tenants with nothing queued whose count is still ahead of the virtual time. */
  private readonly idle = new Map<string, number>();
  private totalInputs = 0;
  private totalTokens = 0;
  private virtualTime = 0;
  private joins = 0;

  constructor(private readonly bounds: QueueBounds) {}

  /** Inputs waiting, all tenants. */
  get inputs(): number {
    return this.totalInputs;
  }

  /** Tokens of the inputs waiting, all tenants. */
  get tokens(): number {
    return this.totalTokens;
  }

  /** Tokens `tenant` has waiting. */
  tokensOf(tenant: string): number {
    return this.tenants.get(tenant)?.tokens ?? 0;
  }

  /** Tenants with inputs waiting. */
  get activeTenants(): number {
    return this.tenants.size;
  }

  /**
   * Whether `tenant` may queue `inputs` more inputs of `tokens` tokens. A tenant within its share
   * is refused only when the whole queue is full; a tenant with nothing waiting is within its
   * share, and anything is admitted into an empty queue, so any valid request can be served.
   */
  admits(tenant: string, inputs: number, tokens: number): boolean {
    const own = this.tenants.get(tenant);
    const b = this.bounds;
    if (own && (own.entries.length + inputs > b.maxTenantInputs || own.tokens + tokens > b.maxTenantTokens)) return false;
    if (this.totalInputs === 0) return true;
    return this.totalInputs + inputs <= b.maxQueueInputs && this.totalTokens + tokens <= b.maxQueueTokens;
  }

  /** Appends `items` to `tenant`'s queue (admission is the caller's, through `admits`). */
  push(tenant: string, items: readonly T[]): void {
    if (items.length === 0) return;
    let queue = this.tenants.get(tenant);
    if (!queue) {
      const served = Math.max(this.virtualTime, this.idle.get(tenant) ?? 0);
      this.idle.delete(tenant);
      queue = { entries: [], tokens: 0, served, joined: this.joins++ };
      this.tenants.set(tenant, queue);
    }
    const tokens = tokensOf(items);
    queue.entries.push(...items);
    queue.tokens += tokens;
    this.totalInputs += items.length;
    this.totalTokens += tokens;
  }

  /** Removes `tenant`'s queued items that match `drop` (a cancelled or failed request's). */
  remove(tenant: string, drop: (item: T) => boolean): void {
    const queue = this.tenants.get(tenant);
    if (!queue) return;
    const removed = queue.entries.filter(drop);
    if (removed.length === 0) return;
    queue.entries = queue.entries.filter((item) => !drop(item));
    this.account(tenant, queue, removed.length, tokensOf(removed));
  }

  /**
   * Takes the next batch off the queues: the least-served tenant's cut (`selectBatch` on its own
   * queue), then the other tenants' oldest inputs, least served first, while the budget allows.
   * Each tenant is charged the tokens it got. Empty when nothing waits. `budget` narrows the
   * batch (the batch lane's smaller calls while online work is about).
   */
  nextBatch(budget: BatchBudget = this.bounds): T[] {
    const lead = this.leastServed(new Set());
    if (!lead) return [];
    const [leadName, leadQueue] = lead;
    this.advance(leadQueue.served);
    const picked = new Set(
      selectBatch(
        leadQueue.entries.map((e) => e.row.length),
        budget,
      ),
    );
    const batch = leadQueue.entries.filter((_, i) => picked.has(i));
    leadQueue.entries = leadQueue.entries.filter((_, i) => !picked.has(i));
    this.charge(leadName, leadQueue, batch);
    this.fill(batch, leadName, budget);
    return batch;
  }

  /** Adds the other tenants' oldest inputs to `batch` while they fit the budget and are of similar length. */
  private fill(batch: T[], leadName: string, budget: BatchBudget): void {
    const done = new Set([leadName]);
    let longest = Math.max(...batch.map((e) => e.row.length));
    while (batch.length < budget.maxBatchSize) {
      const next = this.leastServed(done);
      if (!next) return;
      const [name, queue] = next;
      const head = queue.entries[0]!;
      const wider = Math.max(longest, head.row.length);
      if (wider > longest * MAX_FILL_WIDENING || wider * (batch.length + 1) > budget.maxBatchTokens) {
        done.add(name);
        continue;
      }
      queue.entries.shift();
      batch.push(head);
      longest = wider;
      this.charge(name, queue, [head]);
    }
  }

  private charge(name: string, queue: TenantQueue<T>, taken: readonly T[]): void {
    const tokens = tokensOf(taken);
    queue.served += tokens;
    this.account(name, queue, taken.length, tokens);
  }

  /** Books `inputs` and `tokens` as gone from `queue`; an emptied tenant keeps only its count, while ahead. */
  private account(name: string, queue: TenantQueue<T>, inputs: number, tokens: number): void {
    queue.tokens -= tokens;
    this.totalInputs -= inputs;
    this.totalTokens -= tokens;
    if (queue.entries.length > 0) return;
    this.tenants.delete(name);
    if (queue.served <= this.virtualTime) return;
    this.idle.set(name, queue.served);
    if (this.idle.size > MAX_IDLE_TENANTS) this.idle.delete(this.idle.keys().next().value!);
  }

  /** Moves the virtual time to `start` (never back) and forgets idle tenants it has caught up with. */
  private advance(start: number): void {
    if (start <= this.virtualTime) return;
    this.virtualTime = start;
    for (const [name, served] of this.idle) if (served <= start) this.idle.delete(name);
  }

  private leastServed(except: ReadonlySet<string>): [string, TenantQueue<T>] | undefined {
    let best: [string, TenantQueue<T>] | undefined;
    for (const [name, queue] of this.tenants) {
      if (except.has(name)) continue;
      if (!best || queue.served < best[1].served || (queue.served === best[1].served && queue.joined < best[1].joined)) {
        best = [name, queue];
      }
    }
    return best;
  }
}
