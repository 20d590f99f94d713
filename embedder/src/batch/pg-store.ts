/**
 * The PostgreSQL store, for deployments (BATCH_STORE=postgres://…): the database a platform team
 * already runs, backs up and replicates; every embedder replica shares it, and a part or record
 * written is durable once the statement commits. The only importer of `pg`. Two tables, created
 * if missing: parts (sealed bytes, bytea) and file records (identifiers, counts, sealed name).
 */
import pg from 'pg';
import type { BatchFileStore, StoredFile } from './file-store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ctg_batch_parts (
  grp text NOT NULL, idx integer NOT NULL, data bytea NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (grp, idx));
CREATE TABLE IF NOT EXISTS ctg_batch_files (
  org text NOT NULL, id text NOT NULL, created_at bigint NOT NULL, expires_at bigint NOT NULL,
  record jsonb NOT NULL, PRIMARY KEY (org, id));
CREATE INDEX IF NOT EXISTS ctg_batch_files_expiry ON ctg_batch_files (expires_at);`;

export interface PostgresStoreOptions {
  readonly url: string;
  /** Bound on each statement and on connecting. */
  readonly timeoutMs: number;
  readonly maxConnections?: number;
}

/** Opens a pool on `url`, creates the tables if missing, and returns the store. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<BatchFileStore> {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 4,
    connectionTimeoutMillis: options.timeoutMs,
    statement_timeout: options.timeoutMs,
    query_timeout: options.timeoutMs,
  });
  // A dropped idle connection is replaced on the next query; the event only keeps it from crashing the process.
  pool.on('error', () => undefined);
  await pool.query(SCHEMA);
  const rowsOf = async (text: string, values: unknown[]) => (await pool.query(text, values)).rows as Array<Record<string, unknown>>;
  const record = (row: Record<string, unknown>): StoredFile => row.record as StoredFile;

  return {
    async putPart(group, index, sealed) {
      await pool.query(
        'INSERT INTO ctg_batch_parts (grp, idx, data) VALUES ($1, $2, $3) ON CONFLICT (grp, idx) DO UPDATE SET data = $3, written_at = now()',
        [group, index, sealed],
      );
    },
    async putPartIfAbsent(group, index, sealed) {
      const result = await pool.query('INSERT INTO ctg_batch_parts (grp, idx, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        group,
        index,
        sealed,
      ]);
      return result.rowCount === 1;
    },
    async getPart(group, index) {
      const rows = await rowsOf('SELECT data FROM ctg_batch_parts WHERE grp = $1 AND idx = $2', [group, index]);
      return rows[0] ? (rows[0].data as Buffer) : null;
    },
    async deleteGroup(group) {
      await pool.query('DELETE FROM ctg_batch_parts WHERE grp = $1', [group]);
    },
    async saveFile(file) {
      await pool.query(
        `INSERT INTO ctg_batch_files (org, id, created_at, expires_at, record) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (org, id) DO UPDATE SET expires_at = $4, record = $5`,
        [file.org, file.id, file.createdAt, file.expiresAt, JSON.stringify(file)],
      );
    },
    async getFile(org, id) {
      const rows = await rowsOf('SELECT record FROM ctg_batch_files WHERE org = $1 AND id = $2', [org, id]);
      return rows[0] ? record(rows[0]) : null;
    },
    async listFiles(org) {
      const rows = await rowsOf('SELECT record FROM ctg_batch_files WHERE org = $1 ORDER BY created_at DESC, id DESC', [org]);
      return rows.map(record);
    },
    async deleteFile(org, id) {
      const result = await pool.query('DELETE FROM ctg_batch_files WHERE org = $1 AND id = $2', [org, id]);
      return result.rowCount === 1;
    },
    async expiredFiles(now, limit) {
      return (await rowsOf('SELECT record FROM ctg_batch_files WHERE expires_at <= $1 LIMIT $2', [now, limit])).map(record);
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    close: () => pool.end(),
  };
}
