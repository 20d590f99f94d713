/**
 * What the admin core needs: settings, the admin/report stores, the audit log and a clock;
 * and who is acting. The CLI and the admin API build these and call the same operations.
 */
import type { AuthzConfig } from '../config.js';
import { AdminStore } from '../store/admin.js';
import { AuditStore } from '../store/audit.js';
import { openConnection, type Connection } from '../store/connection.js';
import { UsageReports } from '../store/reports.js';
import { AuditLog } from './audit-log.js';

export type CoreConfig = Pick<AuthzConfig, 'modelId' | 'defaultRpm' | 'defaultTpm' | 'keyPrefix' | 'keyHashSecret'>;

export interface AdminDeps {
  readonly config: CoreConfig;
  readonly admin: AdminStore;
  readonly reports: UsageReports;
  readonly audit: AuditLog;
  readonly now: () => number;
}

/** Who performs an action, for the audit trail: an actor and where the request came from. */
export interface Who {
  readonly actor: string;
  readonly from: string;
}

/** Opens one Redis connection and the admin dependencies on it. */
export function openAdminDeps(config: CoreConfig & Pick<AuthzConfig, 'redisUrl' | 'redisSentinels' | 'redisSentinelName' | 'redisKeyPrefix' | 'redisTimeoutMs'>, now: () => number = Date.now): { deps: AdminDeps; connection: Connection } {
  // Admin commands may scan whole streams; give them at least 2 s per command.
  const connection = openConnection({
    url: config.redisUrl, sentinels: config.redisSentinels, sentinelName: config.redisSentinelName,
    prefix: config.redisKeyPrefix, timeoutMs: Math.max(config.redisTimeoutMs, 2000),
  });
  const deps: AdminDeps = { config, admin: new AdminStore(connection), reports: new UsageReports(connection), audit: new AuditLog(new AuditStore(connection), now), now };
  return { deps, connection };
}
