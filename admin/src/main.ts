/**
 * Starts the admin listener (console + admin API) on ADMIN_HOST:ADMIN_PORT, loopback by
 * default, in its own process: never behind the public gateway port. A bad setting stops it
 * with the variable named. With ADMIN_TOKEN_FILE, that token is registered as a token of the
 * owner ADMIN_BOOTSTRAP_NAME first (how `make console` gets its first administrator). Changes
 * a crash left recorded but not applied are completed at start and every RECOVER_EVERY_MS
 * (operations/journal.ts).
 */
import { hostname } from 'node:os';
import { ConfigError, loadAdminConfig, type AdminConfig } from './config.js';
import { buildAdminServer } from './http/server.js';
import { openAdminDeps } from './operations/deps.js';
import { createOperations } from './operations/operations.js';
import { watchSecrets } from '../../contract/secrets.js';

const RECOVER_EVERY_MS = 30_000;

function configOrExit(): AdminConfig {
  try {
    return loadAdminConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = configOrExit();
  const { deps, connection } = openAdminDeps(config);
  const ops = createOperations(deps);
  await connection.ready();
  const recovered = await deps.journal.recover();
  const bootstrap =
    config.bootstrapToken === null
      ? null
      : await ops.bootstrapOwner(config.bootstrapName, config.bootstrapToken, { actor: `system:${hostname()}`, from: 'ADMIN_TOKEN_FILE' });
  const app = buildAdminServer({
    ops,
    config,
    stores: deps,
    sessionLifetimes: { idleMs: config.adminSessionTtlMs, maxMs: config.adminSessionMaxMs },
    trustedProxies: config.trustedProxies,
    oidc: config.oidc,
    publicUrl: config.publicUrl,
    logLevel: config.logLevel,
    ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
  });
  // A rotated metrics token is used without a restart (deploy/README.md, rotation).
  watchSecrets([config.metricsToken], (reload) =>
    reload.event === 'secret_reloaded'
      ? app.log.info(reload, 'secret reloaded')
      : app.log.warn(reload, 'secret file refused; the values held stay'),
  );
  await app.listen({ host: config.adminHost, port: config.adminPort });
  if (recovered.completed + recovered.failed + recovered.stuck > 0)
    app.log.warn({ event: 'changes_recovered', ...recovered }, 'completed changes left open');
  const recovering = setInterval(() => {
    deps.journal.recover().then(
      (found) => {
        if (found.completed + found.failed + found.stuck > 0)
          app.log.warn({ event: 'changes_recovered', ...found }, 'completed changes left open');
      },
      (error: unknown) => app.log.error({ event: 'changes_recovery_failed', err: error }, 'could not complete the open changes'),
    );
  }, RECOVER_EVERY_MS);
  recovering.unref();
  if (bootstrap === 'revoked') {
    app.log.warn(
      { event: 'bootstrap_token_revoked' },
      'the token in ADMIN_TOKEN_FILE was revoked and stays revoked; delete the file (make console creates a new one) or sign in with another token',
    );
  }
  if ((await deps.admins.count()) === 0 && config.oidc === null) {
    app.log.warn(
      { event: 'no_administrators' },
      'no administrator exists yet: create one with `npm run admin -- admin create <name> --role owner` and `admin token create <name>`, or set ADMIN_TOKEN_FILE',
    );
  }
  const shutdown = (): void => {
    clearInterval(recovering);
    void app
      .close()
      .then(() => connection.close())
      .then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`admin server failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
