/**
 * What the operations need: settings, the stores, the audit log and a clock; and who is acting.
 * The CLI and the admin API build these (openAdminDeps) and call the same operations.
 */
import type { AccessSettings } from '../../../contract/access-settings.js';
import { AuditAnchor } from '../audit/anchor.js';
import { AuditLog } from '../audit/log.js';
import { signerFromSecret } from '../audit/signing.js';
import { AdministratorStore } from '../store/administrators.js';
import { AuditStore } from '../store/audit.js';
import { BudgetStore } from '../store/budgets.js';
import { ChangeStore } from '../store/changes.js';
import { openConnection, type Connection } from '../store/connection.js';
import { OrgStore } from '../store/organizations.js';
import { UsageReports } from '../store/reports.js';
import { SessionStore } from '../store/sessions.js';
import { ChangeJournal } from './journal.js';

/** The settings the operations read: the access settings admin shares with authz. */
export type CoreConfig = AccessSettings;

export interface AdminDeps {
  readonly config: CoreConfig;
  readonly orgs: OrgStore;
  readonly admins: AdministratorStore;
  readonly sessions: SessionStore;
  readonly budgets: BudgetStore;
  readonly reports: UsageReports;
  readonly audit: AuditLog;
  /** Records, then applies, every change to the records (journal.ts). */
  readonly journal: ChangeJournal;
  readonly now: () => number;
}

/** Who performs an action, for the audit trail: an actor and where the request came from. */
export interface Who {
  readonly actor: string;
  readonly from: string;
}

/** What opening the dependencies reads (config.ts's CliConfig): Redis, the access settings, the audit trail's. */
export interface OpenConfig extends CoreConfig {
  readonly redisUrl: string;
  readonly redisSentinels?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  /** A Redis Cluster's seed nodes (REDIS_CLUSTER_NODES=host:port,…). */
  readonly redisClusterNodes?: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly redisSentinelName?: string;
  readonly redisSentinelPassword?: string;
  readonly redisTlsCa?: string;
  readonly redisKeyPrefix: string;
  readonly redisTimeoutMs: number;
  /** AUDIT_SECRET, or the contents of AUDIT_SECRET_FILE (at least 32 characters): the seed of the trail's Ed25519 signing key. */
  readonly auditSecret: string;
  /** AUDIT_ANCHOR_FILE: where signed checkpoints of the chain are appended. */
  readonly auditAnchorFile: string;
}

/** Opens one Redis connection and the admin dependencies on it. */
export function openAdminDeps(config: OpenConfig, now: () => number = Date.now): { deps: AdminDeps; connection: Connection } {
  // Admin commands may scan whole streams; give them at least 2 s per command.
  const connection = openConnection({
    url: config.redisUrl,
    sentinels: config.redisSentinels,
    ...(config.redisClusterNodes ? { clusterNodes: config.redisClusterNodes } : {}),
    sentinelName: config.redisSentinelName,
    sentinelPassword: config.redisSentinelPassword,
    tlsCa: config.redisTlsCa,
    prefix: config.redisKeyPrefix,
    timeoutMs: Math.max(config.redisTimeoutMs, 2000),
  });
  // The trail is named by its Redis prefix, so test and production trails may share a checkpoint file.
  const trail = config.redisKeyPrefix;
  const audit = new AuditLog(
    new AuditStore(connection),
    trail,
    signerFromSecret(config.auditSecret),
    new AuditAnchor(config.auditAnchorFile, trail),
  );
  const deps: AdminDeps = {
    config,
    orgs: new OrgStore(connection),
    admins: new AdministratorStore(connection),
    sessions: new SessionStore(connection),
    budgets: new BudgetStore(connection),
    reports: new UsageReports(connection),
    audit,
    journal: new ChangeJournal(audit, new ChangeStore(connection)),
    now,
  };
  return { deps, connection };
}
