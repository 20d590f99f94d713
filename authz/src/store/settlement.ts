/**
 * The settlement's setup on Redis, kept by authz (a full Redis user): the secret namespace (read,
 * or created once with SET NX), the function libraries rendered with it (settlement.lua, with
 * authz's Check, and batch.lua), and the embedder's ACL user, whose rules name the namespace and
 * so can only be written by someone who knows it. Done on every (re)connect and checked every
 * REPAIR_MS, so a Redis that restarted, was flushed or was promoted from a replica (ACL users are
 * not replicated) gets its functions and the embedder's user back without anyone's hand.
 */
import { readFileSync } from 'node:fs';
import { renderLibrary, settlementAclRules, settlementFunctionNames, settlementKeys } from '../../../contract/redis/settlement-keys.js';
import { readSettlementNamespace } from '../../../contract/redis/settlement-namespace.js';
import { nodesOf, primariesOf } from '../../../contract/redis-target.js';
import type { Connection } from './connection.js';
import { migrateLayout } from './migrate-layout.js';

const SETTLEMENT = readFileSync(new URL('../../../contract/redis/settlement.lua', import.meta.url), 'utf8');
const BATCH = readFileSync(new URL('../../../contract/redis/batch.lua', import.meta.url), 'utf8');
/** How often the functions and the embedder's user are checked (and put back when missing). */
const REPAIR_MS = 30_000;

/** The embedder's Redis user: its name and password (EMBEDDER_REDIS_USERNAME, EMBEDDER_REDIS_PASSWORD[_FILE]). */
export interface EmbedderUser {
  readonly username: string;
  readonly password: string;
}

export class SettlementSetup {
  /** The namespace, once read; the check waits for it (fails closed without it). */
  private ns: string | undefined;
  private running: Promise<void> | undefined;
  /** The move from the untagged layout (migrate-layout.ts), once per process; it ends resolved (done) or unset (to try again). */
  private migration: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  readonly functions: ReturnType<typeof settlementFunctionNames>;

  constructor(
    private readonly connection: Connection,
    private readonly embedder: EmbedderUser | undefined,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.functions = settlementFunctionNames(connection.prefix);
    const run = (force: boolean) => void this.ensure(force).catch(onError);
    connection.redis.on('ready', () => run(true));
    // A Redis Cluster client learns nodes as it refreshes the topology: each new one gets the
    // embedder's user (and, a primary, the functions) now, not at the next check.
    connection.redis.on('+node', () => run(false));
    this.timer = setInterval(() => run(false), REPAIR_MS);
    this.timer.unref();
  }

  /** The settlement's key names (for tests and tools that read usage as a full user). */
  keys(): ReturnType<typeof settlementKeys> | undefined {
    return this.ns === undefined ? undefined : settlementKeys(this.connection.prefix, this.ns);
  }

  /**
   * Reads (or creates) the namespace, then, when `force` or when missing, loads the libraries
   * and (re)creates the embedder's user. One at a time.
   */
  ensure(force = true): Promise<void> {
    this.running ??= this.repair(force).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the periodic check. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves once the state of the untagged layout is moved (tests; the first repair starts it). */
  migrated(): Promise<void> {
    return this.migration ?? Promise.reject(new Error('the layout migration has not started'));
  }

  /**
   * Functions and ACL users are per node: in a Redis Cluster each primary gets the functions
   * (its replicas take them from it) and every node the user.
   */
  private async repair(force: boolean): Promise<void> {
    const { redis, prefix } = this.connection;
    const ns = await readSettlementNamespace(this.connection);
    const changed = ns !== this.ns;
    const primaries = primariesOf(redis);
    if (primaries.length === 0) throw new Error('no Redis primary known yet');
    for (const node of primaries) {
      const loaded =
        !force &&
        ((await this.connection.guard(() => node.call('FUNCTION', 'LIST', 'LIBRARYNAME', this.functions.library))) as unknown[]).length > 0;
      if (!loaded || changed) {
        await this.connection.guard(() => node.call('FUNCTION', 'LOAD', 'REPLACE', renderLibrary(SETTLEMENT, prefix, ns)));
        await this.connection.guard(() => node.call('FUNCTION', 'LOAD', 'REPLACE', renderLibrary(BATCH, prefix, ns)));
      }
    }
    if (this.embedder) {
      const { username, password } = this.embedder;
      // On a cluster's replicas too (ACL users are not replicated): a promoted one has the user at once.
      for (const node of nodesOf(redis)) {
        const present = !force && !changed && (await this.connection.guard(() => node.call('ACL', 'GETUSER', username))) !== null;
        if (!present) {
          await this.connection.guard(() => node.call('ACL', 'SETUSER', username, ...settlementAclRules(prefix, ns, password)));
        }
      }
    }
    this.ns = ns;
    // In the background: the Check works meanwhile (a budget not yet moved is not seen for that moment).
    this.migration ??= migrateLayout(this.connection, ns).then(
      () => undefined,
      (error: unknown) => {
        this.migration = undefined;
        this.onError(error);
      },
    );
  }
}
