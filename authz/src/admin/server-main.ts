/**
 * Starts the admin listener (console + admin API) on ADMIN_HOST:ADMIN_PORT, loopback by
 * default, in its own process: never behind the public gateway port. A bad setting or a
 * missing admin token stops it with the variable named.
 */
import { ConfigError } from '../config.js';
import { loadAdminConfig, type AdminConfig } from './config.js';
import { openAdminDeps } from './deps.js';
import { buildAdminServer } from './http/server.js';
import { createOperations } from './operations.js';

function configOrExit(): AdminConfig {
  try {
    return loadAdminConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message.replace('authz configuration', 'admin configuration')}\n`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = configOrExit();
  const { deps, connection } = openAdminDeps(config);
  const app = buildAdminServer({
    ops: createOperations(deps), config, token: config.adminToken, actorHeader: config.adminActorHeader,
    sessionTtlMs: config.adminSessionTtlMs, now: Date.now, logLevel: config.logLevel,
  });
  await app.listen({ host: config.adminHost, port: config.adminPort });
  const shutdown = (): void => {
    void app.close().then(() => connection.close()).then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`admin server failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
