/**
 * Whether the Redis behind the store keeps anything on disk. Redis is the system of record for
 * organizations, keys and usage: one that neither appends nor snapshots loses all of them when
 * it restarts, and authz says so loudly at start-up.
 */
import { openRedis, type RedisTarget } from '../../../contract/redis-target.js';

/** What CONFIG GET appendonly / save answered. */
export interface PersistenceConfig {
  readonly appendonly: string;
  readonly save: string;
}

/** A warning when nothing persists, else null (pure, for the tests). */
export function persistenceWarning(config: PersistenceConfig): string | null {
  if (config.appendonly === 'yes' || config.save.trim() !== '') return null;
  return (
    'redis keeps nothing on disk (appendonly no, save ""): a Redis restart loses every organization, key and usage record. ' +
    'Enable appendonly (see docs/operating.md, "Persistence and replication")'
  );
}

/** Asks the target Redis for its persistence settings (one short-lived connection); null when it cannot say. */
export async function readPersistence(target: RedisTarget, timeoutMs: number): Promise<PersistenceConfig | null> {
  const redis = openRedis(target, {
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(1000, timeoutMs),
    maxRetriesPerRequest: 1,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const [, appendonly = ''] = (await redis.config('GET', 'appendonly')) as string[];
    const [, save = ''] = (await redis.config('GET', 'save')) as string[];
    return { appendonly, save };
  } catch {
    // CONFIG may be renamed or forbidden (managed Redis): nothing to say then.
    return null;
  } finally {
    redis.disconnect();
  }
}

/** Once the store first connects, checks its Redis and calls `warn` when nothing persists. */
export function warnWhenNotPersistent(
  store: { onReadyChange(listener: (ready: boolean) => void): () => void },
  target: RedisTarget,
  timeoutMs: number,
  warn: (persistence: PersistenceConfig, warning: string) => void,
): void {
  const unsubscribe = store.onReadyChange((ready) => {
    if (!ready) return;
    unsubscribe();
    void readPersistence(target, timeoutMs).then((persistence) => {
      const warning = persistence && persistenceWarning(persistence);
      if (persistence && warning) warn(persistence, warning);
    });
  });
}
