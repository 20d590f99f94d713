/**
 * Who the CLI acts as: always a named administrator, authenticated by their own token
 * (ADMIN_TOKEN, ADMIN_TOKEN_FILE, or locally `.local/admin-token`), with their role checked per
 * command as the admin API checks it per operation. Only while no administrator exists at all
 * does the CLI act without one, as `bootstrap:<os user>`, so that the first owner can be made
 * (`admin create <you> --role owner` then prints their first token). A refused token or role is
 * recorded in the audit trail, with the token id tried (never its secret).
 */
import type { CliToken } from '../config.js';
import { actorOf, roleAllows, tokenIdOf } from '../operations/administrators.js';
import type { Who } from '../operations/deps.js';
import { AdminError } from '../operations/errors.js';
import type { Operations } from '../operations/operations.js';
import type { Role } from '../operations/rules.js';

/** The CLI's actor: who, and their role (null while bootstrapping: no administrator exists yet). */
export interface CliActor {
  readonly who: Who;
  readonly role: Role | null;
}

const NEEDS_TOKEN =
  'the CLI acts as a named administrator: set ADMIN_TOKEN_FILE to a file holding your administrator token (an owner makes one with `admin token create <you>`)';

/** Authenticates the CLI's token, or bootstraps when no administrator exists; refusals are recorded. */
export async function cliActor(ops: Operations, token: CliToken | null, place: { user: string; host: string }): Promise<CliActor> {
  const from = `cli:${place.user}@${place.host}`;
  if (token) {
    const admin = await ops.authenticateToken(token.token);
    if (admin) return { who: { actor: actorOf(admin.name), from }, role: admin.role };
  }
  // The local default file may belong to another Redis prefix's console: only a token named on
  // purpose is an attempt to sign in.
  if (!token || token.from === '.local/admin-token') {
    if ((await ops.countAdmins()) === 0) return { who: { actor: `bootstrap:${place.user}`, from }, role: null };
    if (!token) throw new AdminError('unauthorized', NEEDS_TOKEN);
  }
  const tried = tokenIdOf(token.token);
  await ops.recordRefusal({
    actor: 'anonymous',
    from,
    action: 'session.fail',
    target: tried === null ? 'cli' : `admin-token:${tried}`,
    detail: { reason: 'unknown_token', via: token.from, ...(tried === null ? {} : { tokenId: tried }) },
  });
  throw new AdminError('unauthorized', `${token.from}: not a valid administrator token here; ${NEEDS_TOKEN}`);
}

/** Refuses (and records) a command the actor's role does not allow. */
export async function checkRole(ops: Operations, actor: CliActor, command: string, needed: Role): Promise<void> {
  if (actor.role === null || roleAllows(actor.role, needed)) return;
  await ops.recordRefusal({ ...actor.who, action: 'access.forbidden', target: `cli:${command}`, detail: { needed, role: actor.role } });
  throw new AdminError(
    'forbidden',
    `${command} needs the ${needed} role; ${actor.who.actor} is ${actor.role === 'viewer' ? 'a viewer' : `an ${actor.role}`}`,
  );
}
