/**
 * What the admin core needs: settings, the admin/report stores, the audit log and a clock;
 * and who is acting. The CLI and the admin API build these and call the same operations.
 */
import type { AuthzConfig } from '../config.js';
import { AdminStore } from '../store/admin.js';
import { SessionStore } from '../store/admin-sessions.js';
import { AdminDirectory } from '../store/admins.js';
import { BudgetStore } from '../store/budgets.js';
import { AuditStore } from '../store/audit.js';
import { openConnection, type Connection } from '../store/connection.js';
import { UsageReports } from '../store/reports.js';
import { AuditAnchor } from './audit-anchor.js';
import { auditKeys } from './audit-chain.js';
import type { AuditSettings } from './audit-config.js';
import { AuditLog } from './audit-log.js';

export type CoreConfig = Pick<AuthzConfig, 'modelId' | 'defaultRpm' | 'defaultTpm' | 'keyPrefix' | 'keyHashSecret'>;

export interface AdminDeps {
  readonly config: CoreConfig;
  readonly admin: AdminStore;
  readonly admins: AdminDirectory;
  readonly sessions: SessionStore;
  readonly budgets: BudgetStore;
  readonly reports: UsageReports;
  readonly audit: AuditLog;
  readonly now: () => number;
}

/** Who performs an action, for the audit trail: an actor and where the request came from. */
export interface Who {
  readonly actor: string;
  readonly from: string;
}

export type OpenConfig = CoreConfig &
  AuditSettings &
  Pick<
    AuthzConfig,
    'redisUrl' | 'redisSentinels' | 'redisSentinelName' | 'redisSentinelPassword' | 'redisTlsCa' | 'redisKeyPrefix' | 'redisTimeoutMs'
  >;

/** Opens one Redis connection and the admin dependencies on it. */
export function openAdminDeps(config: OpenConfig, now: () => number = Date.now): { deps: AdminDeps; connection: Connection } {
  // Admin commands may scan whole streams; give them at least 2 s per command.
  const connection = openConnection({
    url: config.redisUrl,
    sentinels: config.redisSentinels,
    sentinelName: config.redisSentinelName,
    sentinelPassword: config.redisSentinelPassword,
    tlsCa: config.redisTlsCa,
    prefix: config.redisKeyPrefix,
    timeoutMs: Math.max(config.redisTimeoutMs, 2000),
  });
  const keys = auditKeys(config.auditSecret);
  // The trail is named by its Redis prefix, so test and production trails may share a checkpoint file.
  const anchor = new AuditAnchor(config.auditAnchorFile, config.redisKeyPrefix, keys.checkpoint, now);
  const audit = new AuditLog(new AuditStore(connection), now, keys, anchor);
  const deps: AdminDeps = {
    config,
    admin: new AdminStore(connection),
    admins: new AdminDirectory(connection),
    sessions: new SessionStore(connection),
    budgets: new BudgetStore(connection),
    reports: new UsageReports(connection),
    audit,
    now,
  };
  return { deps, connection };
}
